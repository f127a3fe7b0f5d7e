import { HostClientError } from "./host-client-error.js";
import {
  keySubprotocol,
  type SocketFactory,
  SPARK_SUBPROTOCOL,
  type WebSocketLike,
  WS_OPEN,
} from "./socket.js";

export type ConnectionStatus = "idle" | "connecting" | "open" | "reconnecting" | "closed";

export interface HostConnectionOptions {
  /** The agent host endpoint, `ws://HOST:PORT/v1/agent`. */
  url: string;
  /**
   * Sent as `Authorization: Bearer <key>` (or, with `keyAsSubprotocol`, as a subprotocol).
   * Default: none.
   */
  apiKey?: string;
  /** Offer the key as a subprotocol instead of a header (browsers). Default: false. */
  keyAsSubprotocol?: boolean;
  /** Opens sockets; the platform adapter. */
  createSocket: SocketFactory;
  /** First delay before reconnecting; doubles per failed try, up to 5 s. Default: 250 ms. */
  reconnectDelayMs?: number;
  /**
   * Keep trying when the first connection fails, as after a drop (a browser page opened while the
   * server restarts). Default: false: `connect` rejects with `connect_failed`.
   */
  retryFirstConnect?: boolean;
}

/** What a connection tells its owner. */
export interface ConnectionListener {
  status(status: ConnectionStatus): void;
  /** A text frame of the open socket. */
  frame(data: string): void;
  /** The socket closed or was dropped: nothing sent on it will be answered. */
  lost(): void;
  /** A line for the connection log. */
  log(line: string): void;
}

/** The longest delay between tries. */
const MAX_RECONNECT_DELAY_MS = 5000;
/**
 * Spread of each delay, so many clients of a restarted server do not all come back at once: a
 * delay is scaled by a factor in [1 - JITTER, 1 + JITTER).
 */
const JITTER = 0.25;

/** The delay before try `attempt` (0: the first after a drop): doubling from `firstMs`, capped, spread by `random` in [0, 1). */
export function reconnectDelay(attempt: number, firstMs: number, random: number): number {
  const capped = Math.min(MAX_RECONNECT_DELAY_MS, firstMs * 2 ** attempt);
  return Math.round(capped * (1 - JITTER + 2 * JITTER * random));
}

/**
 * One WebSocket to the agent host at a time: it offers Spark's subprotocol and the key, and after a
 * drop opens the next with backoff until disposed. Frames of an abandoned socket are never reported.
 */
export class HostConnection {
  private url: string;
  private apiKey: string;
  private socket: WebSocketLike | null = null;
  /** Bumped per socket, so events and closes of an abandoned socket are ignored. */
  private generation = 0;
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private everOpened = false;
  private disposed = false;
  private currentStatus: ConnectionStatus = "idle";
  /** Why the last connection attempt failed, for `connect_failed`. */
  private lastFailure = "";
  /** `connect` calls waiting for the status to become open or closed. */
  private readonly waiters = new Set<(status: ConnectionStatus) => void>();

  constructor(
    private readonly options: HostConnectionOptions,
    private readonly listener: ConnectionListener,
  ) {
    this.url = options.url;
    this.apiKey = options.apiKey ?? "";
  }

  get status(): ConnectionStatus {
    return this.currentStatus;
  }

  /** The host endpoint in use. */
  get endpoint(): string {
    return this.url;
  }

  /**
   * Opens the connection; rejects with `connect_failed` when the first try fails. Once open, it
   * reconnects by itself until disposed.
   */
  connect(): Promise<void> {
    if (this.disposed) return Promise.reject(new HostClientError("not_connected", "The client is disposed."));
    if (this.currentStatus === "open") return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = (status: ConnectionStatus) => {
        if (status === "open") {
          this.waiters.delete(waiter);
          resolve();
        } else if (status === "closed") {
          this.waiters.delete(waiter);
          reject(new HostClientError("connect_failed", this.lastFailure || `Cannot connect to ${this.url}.`));
        }
      };
      this.waiters.add(waiter);
      // Otherwise a socket is opening, or a reconnect is due, and the status will tell.
      if (!this.socket && !this.reconnectTimer) this.open();
    });
  }

  /** Skips the backoff wait of a pending reconnect (the network came back). */
  retryNow(): void {
    if (this.disposed || this.socket || !this.reconnectTimer) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.open();
  }

  /** Drops the socket in use and connects to `url` instead, as if for the first time. */
  retarget(url: string, apiKey?: string): Promise<void> {
    this.url = url;
    if (apiKey !== undefined) this.apiKey = apiKey;
    this.abandonSocket();
    this.everOpened = false;
    this.setStatus("idle");
    return this.connect();
  }

  /** Sends one frame; throws `not_connected` while the socket is not open. */
  send(data: string): void {
    const socket = this.socket;
    if (!socket || this.currentStatus !== "open" || socket.readyState !== WS_OPEN) {
      throw new HostClientError(
        "not_connected",
        this.currentStatus === "reconnecting"
          ? "Reconnecting to Spark; try again in a moment."
          : "Not connected to Spark.",
      );
    }
    socket.send(data);
  }

  /** Closes the connection for good. Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.abandonSocket();
    this.setStatus("closed");
  }

  private open(): void {
    const generation = ++this.generation;
    this.setStatus(this.everOpened ? "reconnecting" : "connecting");
    const headers: Record<string, string> = {};
    const protocols = [SPARK_SUBPROTOCOL];
    if (this.apiKey) {
      if (this.options.keyAsSubprotocol) protocols.push(keySubprotocol(this.apiKey));
      else headers.Authorization = `Bearer ${this.apiKey}`;
    }
    this.listener.log(`Connecting to ${this.url}`);
    let socket: WebSocketLike;
    try {
      socket = this.options.createSocket(this.url, protocols, headers);
    } catch (error) {
      this.lastFailure = error instanceof Error ? error.message : String(error);
      this.onClosed(generation);
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      if (generation !== this.generation) return;
      this.everOpened = true;
      this.attempt = 0;
      this.lastFailure = "";
      this.listener.log(`Connected to ${this.url}`);
      this.setStatus("open");
    };
    socket.onmessage = (event) => {
      if (generation === this.generation) this.listener.frame(String(event.data));
    };
    socket.onerror = (event) => {
      if (generation !== this.generation) return;
      const message = event.message ?? (event.error instanceof Error ? event.error.message : "");
      if (message) this.lastFailure = message;
      this.listener.log(`Socket error: ${message || "unknown"}`);
    };
    socket.onclose = (event) => {
      if (generation !== this.generation) return;
      this.listener.log(`Connection closed (${event.code}${event.reason ? ` ${event.reason}` : ""})`);
      this.onClosed(generation);
    };
  }

  private onClosed(generation: number): void {
    if (generation !== this.generation) return;
    this.socket = null;
    this.listener.lost();
    if (this.disposed || (!this.everOpened && !this.options.retryFirstConnect)) {
      this.setStatus("closed");
      return;
    }
    const delay = reconnectDelay(this.attempt, this.options.reconnectDelayMs ?? 250, Math.random());
    this.attempt++;
    this.setStatus("reconnecting");
    this.listener.log(`Reconnecting in ${delay} ms`);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.disposed) this.open();
    }, delay);
  }

  /** Drops the current socket without reconnecting from its close. */
  private abandonSocket(): void {
    this.generation++;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    const socket = this.socket;
    this.socket = null;
    if (socket) {
      socket.onopen = socket.onmessage = socket.onclose = socket.onerror = null;
      try {
        socket.close();
      } catch {
        // Closing a socket that never opened can throw; it is gone either way.
      }
    }
    this.listener.lost();
  }

  private setStatus(status: ConnectionStatus): void {
    if (status === this.currentStatus) return;
    this.currentStatus = status;
    this.listener.status(status);
    for (const waiter of [...this.waiters]) waiter(status);
  }
}
