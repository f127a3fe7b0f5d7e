import type { ClientRequest, IncomingMessage } from "node:http";
import WebSocket from "ws";

export type OpenResult = { ok: true; socket: WebSocket } | { ok: false; reason: string };

export interface OpenWebSocketOptions {
  headers: Record<string, string>;
  /** Give up (and terminate the attempt) after this long. */
  timeoutMs: number;
}

/**
 * Opens a WebSocket, or says in a few words why not: the upgrade refused (`HTTP 404 not_found`), a
 * network error, or no answer within the timeout. Never rejects, never waits past the timeout.
 */
export function openWebSocket(url: string, options: OpenWebSocketOptions): Promise<OpenResult> {
  return new Promise((resolve) => {
    // Deflate costs latency on every small delta frame; the SDK turns it off too.
    const socket = new WebSocket(url, { headers: options.headers, perMessageDeflate: false });
    let settled = false;
    const finish = (result: OpenResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.off("open", onOpen);
      socket.off("unexpected-response", onUnexpected);
      if (!result.ok) socket.terminate();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ ok: false, reason: `no answer within ${options.timeoutMs} ms` }),
      options.timeoutMs,
    );
    const onOpen = () => finish({ ok: true, socket });
    const onUnexpected = (request: ClientRequest, response: IncomingMessage) => {
      response.resume();
      request.destroy();
      const status = `${response.statusCode ?? "?"}${response.statusMessage ? ` ${response.statusMessage}` : ""}`;
      finish({ ok: false, reason: `upgrade refused: HTTP ${status}` });
    };
    socket.on("open", onOpen);
    socket.on("unexpected-response", onUnexpected);
    // Stays attached: a terminated attempt still reports its error afterwards.
    socket.on("error", (error) => finish({ ok: false, reason: error.message }));
  });
}
