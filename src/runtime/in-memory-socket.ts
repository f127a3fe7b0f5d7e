import { EventEmitter } from "node:events";
import { type WebSocketLike, WS_OPEN } from "../client-core/socket.js";
import type { HostSocket } from "../host/host-clients.js";

const CLOSED = 3;

/**
 * The two ends of one in-memory connection: `host` for AgentHost.accept, `client` for the client
 * core's HostClient. Frames are delivered in order, each on a later microtask (as a socket would:
 * never inside the `send` that sent it). Closing either end closes both.
 */
export function socketPair(): { host: HostSocket; client: WebSocketLike } {
  let state = WS_OPEN;
  const hostEnd = new EventEmitter();
  const close = (code: number, reason: string) => {
    if (state === CLOSED) return;
    state = CLOSED;
    queueMicrotask(() => {
      hostEnd.emit("close");
      client.onclose?.({ code, reason });
    });
  };
  const host: HostSocket = {
    get readyState() {
      return state;
    },
    OPEN: WS_OPEN,
    send(line: string) {
      if (state !== WS_OPEN) return;
      queueMicrotask(() => {
        if (state === WS_OPEN) client.onmessage?.({ data: line });
      });
    },
    on(event: "message" | "close" | "error", listener: (...args: never[]) => void) {
      hostEnd.on(event, listener as (...args: unknown[]) => void);
      return host;
    },
  };
  const client: WebSocketLike = {
    get readyState() {
      return state;
    },
    send(data: string) {
      if (state !== WS_OPEN) throw new Error("The in-memory socket is closed.");
      queueMicrotask(() => {
        if (state === WS_OPEN) hostEnd.emit("message", Buffer.from(data, "utf8"), false);
      });
    },
    close(code = 1000, reason = "") {
      close(code, reason);
    },
    onopen: null,
    onmessage: null,
    onclose: null,
    onerror: null,
  };
  // Open once the caller has had the chance to set `onopen`.
  queueMicrotask(() => client.onopen?.({}));
  return { host, client };
}
