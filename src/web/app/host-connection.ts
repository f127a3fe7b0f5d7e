import type { HostEvent } from "../../protocol/agent.js";
import type { HostRequest } from "../../protocol/agent-requests.js";

export type ConnectionStatus = "connecting" | "open" | "reconnecting";

export interface HostConnectionOptions {
  /** `ws(s)://host:port/v1/agent`. */
  url: string;
  /** The API key, offered as a subprotocol (browsers cannot set `Authorization`). Default: none. */
  key?: string | null;
  onEvent(event: HostEvent): void;
  /** Each time the socket opens, the first time and after every reconnect. */
  onOpen(): void;
  /** Status changes; `detail` says why the socket is down, when known. */
  onStatus(status: ConnectionStatus, detail: string | null): void;
}

/** Encodes a key as the server expects it: `spark.key.` + base64url of its UTF-8 bytes. */
export function keyProtocol(key: string): string {
  const bytes = new TextEncoder().encode(key);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `spark.key.${btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
}

/**
 * The app's one WebSocket to the agent host. It reconnects by itself with exponential backoff
 * (250 ms doubling to 5 s, with jitter) and calls `onOpen` each time, so the app can resume its
 * threads from the last `seq` it saw.
 */
export class HostConnection {
  private socket: WebSocket | null = null;
  private attempt = 0;
  private everOpened = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private disposed = false;

  constructor(private readonly options: HostConnectionOptions) {
    this.connect();
    addEventListener("online", () => this.retryNow());
  }

  get open(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Sends a request; false when the socket is down (nothing is queued: actions wait for the user). */
  send(request: HostRequest): boolean {
    if (!this.open) return false;
    this.socket!.send(JSON.stringify(request));
    return true;
  }

  /** Skips the backoff wait. */
  retryNow(): void {
    if (this.disposed || this.socket) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.connect();
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    this.socket?.close();
  }

  private connect(): void {
    const { url, key } = this.options;
    this.options.onStatus(this.everOpened || this.attempt > 0 ? "reconnecting" : "connecting", null);
    const socket = new WebSocket(url, key ? ["spark.v1", keyProtocol(key)] : ["spark.v1"]);
    this.socket = socket;
    socket.onopen = () => {
      this.attempt = 0;
      this.everOpened = true;
      this.options.onStatus("open", null);
      this.options.onOpen();
    };
    socket.onmessage = (message) => {
      if (typeof message.data !== "string") return;
      let event: HostEvent;
      try {
        event = JSON.parse(message.data) as HostEvent;
      } catch {
        return;
      }
      this.options.onEvent(event);
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (!this.disposed) void this.retryLater();
    };
  }

  private async retryLater(): Promise<void> {
    const delay = Math.min(5000, 250 * 2 ** this.attempt) * (0.75 + Math.random() * 0.5);
    this.attempt++;
    this.options.onStatus("reconnecting", await this.diagnose());
    if (!this.disposed && !this.socket) this.timer = setTimeout(() => this.connect(), delay);
  }

  /** A browser is told nothing about a refused upgrade; ask the server over HTTP what is wrong. */
  private async diagnose(): Promise<string | null> {
    try {
      const headers: Record<string, string> = this.options.key
        ? { authorization: `Bearer ${this.options.key}` }
        : {};
      const response = await fetch("/v1/models", { headers, cache: "no-store" });
      if (response.status === 401) {
        return "The server needs an API key: open the address that spark serve printed (it ends in #key=…).";
      }
      return null;
    } catch {
      return "The server cannot be reached.";
    }
  }
}
