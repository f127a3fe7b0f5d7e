import type { HostEvent, ThreadInfo } from "../../../src/protocol/agent.js";
import type { HostRequest } from "../../../src/protocol/agent-requests.js";
import type { WireError } from "../../../src/protocol/errors.js";
import { type SocketFactory, type WebSocketLike, WS_OPEN } from "./web-socket-like.js";

/** A thread event as the host sends it: stamped with its thread and per-thread sequence number. */
export type StampedEvent = Extract<HostEvent, { seq: number }>;

export type ConnectionStatus = "idle" | "connecting" | "open" | "reconnecting" | "closed";

export type HostClientErrorCode =
  | "not_connected"
  | "connect_failed"
  | "disconnected"
  | "timeout"
  | "host_error";

/** A failure of the client itself, or an `error` event of the host (`code: "host_error"`, `wire`). */
export class HostClientError extends Error {
  constructor(
    readonly code: HostClientErrorCode,
    message: string,
    readonly wire?: WireError,
  ) {
    super(message);
    this.name = "HostClientError";
  }
}

/** The Spark subprotocol; the host echoes it. */
export const SPARK_SUBPROTOCOL = "spark.v1";

/** The subprotocol a browser, which cannot send `Authorization`, offers its key as. */
export function keySubprotocol(apiKey: string): string {
  const bytes = new TextEncoder().encode(apiKey);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `spark.key.${btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")}`;
}

export interface HostClientOptions {
  /** The agent host endpoint, `ws://HOST:PORT/v1/agent`. */
  url: string;
  /**
   * Sent as `Authorization: Bearer <key>` (or, where `keyAsSubprotocol`, as a subprotocol).
   * Default: none.
   */
  apiKey?: string;
  /** Offer the key as a subprotocol instead of a header (browsers). Default: false. */
  keyAsSubprotocol?: boolean;
  /** Opens sockets; the platform adapter. */
  createSocket: SocketFactory;
  /** First delay before reconnecting; doubles per failed try. Default: 250 ms. */
  reconnectDelayMs?: number;
  /** Longest delay between tries. Default: 5,000 ms. */
  maxReconnectDelayMs?: number;
  /** How long a request waits for its answer. Default: 15,000 ms. */
  requestTimeoutMs?: number;
  /**
   * How long starting or resuming a thread waits for its answer: the host answers once the model
   * has loaded and warmed up, which on a first start can take minutes. Default: 600,000 ms (the
   * server's own bound on waiting for a loading model).
   */
  startTimeoutMs?: number;
}

export interface HostClientEventMap {
  /** A thread event, each exactly once and in order, across reconnects. */
  event: StampedEvent;
  status: ConnectionStatus;
  /** An `error` event of the host. */
  error: WireError;
  list: ThreadInfo[];
  deleted: string;
  /**
   * The client lost track of a thread (the server restarted under it, or the events it missed are
   * no longer kept): views of the thread start over, from its next `thread.started` or the
   * `thread.history` reset that follows.
   */
  reset: string;
  /** A line for the connection log. */
  log: string;
}

interface ThreadState {
  lastSeq: number;
  /** The host epoch `lastSeq` belongs to (null: none seen yet). */
  epoch: string | null;
  /** Waiting for the thread's replay from its start: everything before its `thread.started` is dropped. */
  resync: boolean;
}

interface Waiter {
  match: (event: HostEvent) => boolean;
  /** Rejected by the next host `error` event (the host does not correlate errors with requests). */
  failOnError: boolean;
  resolve: (event: HostEvent) => void;
  reject: (error: HostClientError) => void;
  timer: ReturnType<typeof setTimeout>;
}

type Listener<K extends keyof HostClientEventMap> = (value: HostClientEventMap[K]) => void;

/**
 * A client of Spark's agent host over one WebSocket, with the state a thin client needs: it
 * reconnects with backoff, resumes every thread it follows with `after_seq` (its last seen
 * sequence number) and the host `epoch` it belongs to, and drops what it has seen already. When the
 * host cannot continue (it restarted: another epoch; or the events are no longer kept) it answers
 * with a `thread.history` reset, and the thread's views start over from it.
 */
export class HostClient {
  private url: string;
  private apiKey: string;
  private socket: WebSocketLike | null = null;
  /** Bumped per socket, so events and closes of an abandoned socket are ignored. */
  private generation = 0;
  private readonly threads = new Map<string, ThreadState>();
  private waiters: Waiter[] = [];
  private readonly listeners: { [K in keyof HostClientEventMap]?: Set<Listener<K>> } = {};
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private everOpened = false;
  private disposed = false;
  private currentStatus: ConnectionStatus = "idle";
  /** Why the last connection attempt failed, for `connect_failed`. */
  private lastFailure = "";

  constructor(private readonly options: HostClientOptions) {
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

  on<K extends keyof HostClientEventMap>(type: K, listener: Listener<K>): () => void {
    let set = this.listeners[type] as Set<Listener<K>> | undefined;
    if (!set) {
      set = new Set();
      (this.listeners as Record<string, Set<Listener<K>>>)[type] = set;
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Opens the connection; rejects with `connect_failed` when the first try fails. Once open, the
   * client reconnects by itself until disposed.
   */
  connect(): Promise<void> {
    if (this.disposed) return Promise.reject(new HostClientError("not_connected", "The client is disposed."));
    if (this.currentStatus === "open") return Promise.resolve();
    return new Promise((resolve, reject) => {
      const offStatus = this.on("status", (status) => {
        if (status === "open") {
          offStatus();
          resolve();
        } else if (status === "closed") {
          offStatus();
          reject(new HostClientError("connect_failed", this.lastFailure || `Cannot connect to ${this.url}.`));
        }
      });
      // Otherwise a socket is opening, or a reconnect is due, and the status will tell.
      if (!this.socket && !this.reconnectTimer) this.open();
    });
  }

  /**
   * Points the client at another endpoint (a restarted server). With `fresh`, every followed thread
   * is replayed from its start, since sequence numbers of another server mean nothing here.
   */
  retarget(url: string, options: { fresh?: boolean; apiKey?: string } = {}): Promise<void> {
    this.url = url;
    if (options.apiKey !== undefined) this.apiKey = options.apiKey;
    if (options.fresh) {
      for (const [threadId, state] of this.threads) {
        state.resync = true;
        state.lastSeq = -1;
        state.epoch = null;
        this.emit("reset", threadId);
      }
    }
    this.abandonSocket();
    this.everOpened = false;
    this.setStatus("idle");
    return this.connect();
  }

  /** The last sequence number seen of a thread (-1: none). */
  lastSeq(threadId: string): number {
    return this.threads.get(threadId)?.lastSeq ?? -1;
  }

  /** Starts a thread; resolves with its info once the host announced it. */
  async startThread(): Promise<ThreadInfo> {
    const known = new Set(this.threads.keys());
    // Waiters are added after sending: an answer cannot arrive before this returns to the event loop.
    this.send({ type: "thread.start" });
    const event = await this.waitFor(
      (candidate) => candidate.type === "thread.started" && !known.has(candidate.thread_id),
      { failOnError: true, timeoutMs: this.startTimeoutMs },
    );
    return (event as Extract<StampedEvent, { type: "thread.started" }>).thread;
  }

  /**
   * Follows a thread from its start (a saved session, or a live one of another client); resolves
   * with its info once its replay begins. Views of it should start over.
   */
  async resumeThread(threadId: string): Promise<ThreadInfo> {
    const previous = this.threads.get(threadId);
    this.threads.set(threadId, { lastSeq: -1, epoch: null, resync: true });
    try {
      this.send({ type: "thread.resume", thread_id: threadId, after_seq: -1 });
      // Its start, or (when its first events are no longer kept) a history reset.
      const event = await this.waitFor(
        (candidate) =>
          (candidate.type === "thread.started" ||
            (candidate.type === "thread.history" && candidate.reset === true)) &&
          candidate.thread_id === threadId,
        { failOnError: true, timeoutMs: this.startTimeoutMs },
      );
      return (event as Extract<StampedEvent, { type: "thread.started" | "thread.history" }>).thread!;
    } catch (error) {
      if (previous) this.threads.set(threadId, previous);
      else this.threads.delete(threadId);
      throw error;
    }
  }

  /** Stops delivering a thread's events (the host keeps no per-client subscription to cancel). */
  forget(threadId: string): void {
    this.threads.delete(threadId);
  }

  /** Saved and live threads, newest first. */
  async list(): Promise<ThreadInfo[]> {
    this.send({ type: "thread.list" });
    const event = await this.waitFor((candidate) => candidate.type === "thread.list", { failOnError: false });
    return (event as Extract<HostEvent, { type: "thread.list" }>).threads;
  }

  /** Sends one request; throws `not_connected` while the socket is not open. */
  send(request: HostRequest): void {
    const socket = this.socket;
    if (!socket || this.currentStatus !== "open" || socket.readyState !== WS_OPEN) {
      throw new HostClientError(
        "not_connected",
        this.currentStatus === "reconnecting"
          ? "Reconnecting to Spark; try again in a moment."
          : "Not connected to Spark.",
      );
    }
    socket.send(JSON.stringify(request));
  }

  /** Closes the connection for good; pending requests fail. Idempotent. */
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
    const key = this.apiKey;
    if (key) {
      if (this.options.keyAsSubprotocol) protocols.push(keySubprotocol(key));
      else headers.Authorization = `Bearer ${key}`;
    }
    this.emit("log", `Connecting to ${this.url}`);
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
      this.emit("log", `Connected to ${this.url}`);
      this.setStatus("open");
      for (const [threadId, state] of this.threads) {
        socket.send(
          JSON.stringify({
            type: "thread.resume",
            thread_id: threadId,
            after_seq: state.resync ? -1 : state.lastSeq,
            ...(state.epoch && !state.resync ? { epoch: state.epoch } : {}),
          } satisfies HostRequest),
        );
      }
    };
    socket.onmessage = (event) => {
      if (generation === this.generation) this.onMessage(String(event.data));
    };
    socket.onerror = (event) => {
      if (generation !== this.generation) return;
      const message = event.message ?? (event.error instanceof Error ? event.error.message : "");
      if (message) this.lastFailure = message;
      this.emit("log", `Socket error: ${message || "unknown"}`);
    };
    socket.onclose = (event) => {
      if (generation !== this.generation) return;
      this.emit("log", `Connection closed (${event.code}${event.reason ? ` ${event.reason}` : ""})`);
      this.onClosed(generation);
    };
  }

  private onClosed(generation: number): void {
    if (generation !== this.generation) return;
    this.socket = null;
    this.failWaiters(new HostClientError("disconnected", "The connection to Spark closed."));
    if (this.disposed || !this.everOpened) {
      this.setStatus("closed");
      return;
    }
    const base = this.options.reconnectDelayMs ?? 250;
    const delay = Math.min(this.options.maxReconnectDelayMs ?? 5000, base * 2 ** this.attempt);
    this.attempt++;
    this.setStatus("reconnecting");
    this.emit("log", `Reconnecting in ${delay} ms`);
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
    this.failWaiters(new HostClientError("disconnected", "The connection to Spark closed."));
  }

  private onMessage(data: string): void {
    let event: HostEvent;
    try {
      event = JSON.parse(data) as HostEvent;
    } catch {
      this.emit("log", `Ignored a frame that is not JSON: ${data.slice(0, 80)}`);
      return;
    }
    switch (event.type) {
      case "thread.list":
        this.emit("list", event.threads);
        break;
      case "thread.deleted":
        this.threads.delete(event.thread_id);
        this.emit("deleted", event.thread_id);
        break;
      case "error": {
        this.emit("log", `Host error ${event.error.code}: ${event.error.message}`);
        const waiter = this.waiters.find((candidate) => candidate.failOnError);
        if (waiter) {
          this.removeWaiter(waiter);
          waiter.reject(new HostClientError("host_error", event.error.message, event.error));
        }
        this.emit("error", event.error);
        return;
      }
      default:
        if (!this.accept(event)) return;
    }
    for (const waiter of [...this.waiters]) {
      if (waiter.match(event)) {
        this.removeWaiter(waiter);
        waiter.resolve(event);
      }
    }
  }

  /** Dedupes a stamped event; true if it is new and was delivered. */
  private accept(event: StampedEvent): boolean {
    let state = this.threads.get(event.thread_id);
    if (!state) {
      // A thread this client just started: its first event. Others' events are not followed.
      if (event.type !== "thread.started" || event.seq !== 0) return false;
      state = { lastSeq: -1, epoch: null, resync: false };
      this.threads.set(event.thread_id, state);
    }
    if (event.type === "thread.history" && event.reset) {
      // The host could not continue this client's events: its snapshot replaces what was seen.
      if (!state.resync) this.emit("reset", event.thread_id);
      state.resync = false;
      state.lastSeq = event.seq;
      state.epoch = event.epoch;
      this.emit("event", event);
      return true;
    }
    if (state.resync) {
      if (event.type !== "thread.started") return false;
      state.resync = false;
      state.lastSeq = -1;
      state.epoch = event.epoch;
    }
    if (state.epoch !== null && event.epoch !== state.epoch) {
      // Another epoch without a reset: a restarted server's events, numbered anew.
      this.resync(event.thread_id, state);
      return false;
    }
    if (event.seq <= state.lastSeq) return false;
    if (event.seq > state.lastSeq + 1 && state.lastSeq >= 0) {
      this.emit(
        "log",
        `Events ${state.lastSeq + 1}-${event.seq - 1} of ${event.thread_id} were not received`,
      );
    }
    state.lastSeq = event.seq;
    state.epoch = event.epoch;
    this.emit("event", event);
    return true;
  }

  private resync(threadId: string, state: ThreadState): void {
    this.emit("log", `${threadId}: the server restarted; replaying the thread from its start`);
    state.resync = true;
    state.lastSeq = -1;
    state.epoch = null;
    this.emit("reset", threadId);
    try {
      this.send({ type: "thread.resume", thread_id: threadId, after_seq: -1 });
    } catch {
      // Not open: the next connection resumes it from its start (resync is set).
    }
  }

  private get startTimeoutMs(): number {
    return this.options.startTimeoutMs ?? 600_000;
  }

  private waitFor(
    match: (event: HostEvent) => boolean,
    options: { failOnError: boolean; timeoutMs?: number },
  ): Promise<HostEvent> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        match,
        failOnError: options.failOnError,
        resolve,
        reject,
        timer: setTimeout(
          () => {
            this.removeWaiter(waiter);
            reject(new HostClientError("timeout", "Spark did not answer in time."));
          },
          options.timeoutMs ?? this.options.requestTimeoutMs ?? 15_000,
        ),
      };
      this.waiters.push(waiter);
    });
  }

  private removeWaiter(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    this.waiters = this.waiters.filter((candidate) => candidate !== waiter);
  }

  private failWaiters(error: HostClientError): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }

  private setStatus(status: ConnectionStatus): void {
    if (status === this.currentStatus) return;
    this.currentStatus = status;
    this.emit("status", status);
  }

  private emit<K extends keyof HostClientEventMap>(type: K, value: HostClientEventMap[K]): void {
    const set = this.listeners[type] as Set<Listener<K>> | undefined;
    for (const listener of [...(set ?? [])]) listener(value);
  }
}
