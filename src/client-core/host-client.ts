import type { HostEvent, McpServerInfo, ThreadInfo } from "../protocol/agent.js";
import type { HostRequest } from "../protocol/agent-requests.js";
import type { WireError } from "../protocol/errors.js";
import { decodeMcpServers } from "../protocol/mcp-servers.js";
import {
  keySubprotocol,
  type SocketFactory,
  SPARK_SUBPROTOCOL,
  type WebSocketLike,
  WS_OPEN,
} from "./socket.js";
import type { StampedEvent } from "./thread-view.js";

export type ConnectionStatus = "idle" | "connecting" | "open" | "reconnecting" | "closed";

export type HostClientErrorCode =
  | "not_connected"
  | "connect_failed"
  | "disconnected"
  | "timeout"
  | "host_error";

/** A failure of the client itself, or a host `error` answering a request (`code: "host_error"`, `wire`). */
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

/**
 * The host's answers to a request that carried `request_id` (docs/PROTOCOL.md): exactly one of an
 * `ack` once it took effect, or an `error`. A host that does not echo ids sends neither an ack nor
 * ids on its errors; the client then settles requests on the events they cause.
 */
type HostAnswer =
  | { type: "ack"; request_id: string; thread_id?: string }
  | { type: "error"; request_id?: string; error: WireError };

type IncomingFrame = HostEvent | HostAnswer;

export interface HostClientOptions {
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
  /** First delay before reconnecting; doubles per failed try. Default: 250 ms. */
  reconnectDelayMs?: number;
  /** Longest delay between tries. Default: 5,000 ms. */
  maxReconnectDelayMs?: number;
  /**
   * Spread of each delay, so many clients of a restarted server do not all come back at once: a
   * delay is scaled by a factor in [1 - jitter, 1 + jitter). Default: 0.25.
   */
  jitter?: number;
  /** Random numbers in [0, 1) for the jitter. Default: `Math.random`. */
  random?: () => number;
  /**
   * Keep trying when the first connection fails, as after a drop (a browser page opened while the
   * server restarts). Default: false: `connect` rejects with `connect_failed`.
   */
  retryFirstConnect?: boolean;
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
  /** A thread event of a followed thread, each exactly once and in order, across reconnects. */
  event: StampedEvent;
  status: ConnectionStatus;
  /** A host `error` that answers no pending request of this client. */
  error: WireError;
  list: ThreadInfo[];
  deleted: string;
  /**
   * The client lost track of a thread (the server restarted under it, or the events it missed are
   * no longer kept): views of the thread start over, from its next `thread.started` or the
   * `thread.history` reset that follows.
   */
  reset: string;
  /** The host's MCP servers changed (a new list, whole); also {@link HostClient.mcpServers}. */
  mcp: McpServerInfo[];
  /** A line for the connection log. */
  log: string;
}

interface ThreadState {
  lastSeq: number;
  /** The host epoch `lastSeq` belongs to (null: none seen yet). */
  epoch: string | null;
  /** Waiting for the thread's replay from its start: everything before its `thread.started` is dropped. */
  resync: boolean;
  info: ThreadInfo | null;
}

interface Pending {
  requestId: string;
  /**
   * `ack`: settled by the host's ack, or by the `answeredBy` event on a host not known to echo ids.
   * `event`: the answer is an event (`thread.list`); an ack is not awaited.
   */
  settles: "ack" | "event";
  answeredBy: (event: HostEvent) => boolean;
  /** Not answered by an error without an id (a resume the client sent on its own). */
  quiet: boolean;
  resolve: (answer: Answer) => void;
  reject: (error: HostClientError) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** What settled a request: the host's ack, or (from a host without acks) the event it caused. */
type Answer = { type: "ack"; thread_id?: string } | HostEvent;

type Listener<K extends keyof HostClientEventMap> = (value: HostClientEventMap[K]) => void;

/** Requests a person makes while a thread runs; `thread.start`, `.resume` and `.list` have methods. */
export type ThreadRequest = Exclude<
  HostRequest,
  { type: "thread.start" | "thread.resume" | "thread.list" | "turn.draft" }
>;

/**
 * The one client of Spark's agent host, for every face. Over one WebSocket it reconnects with
 * backoff, resumes every thread it follows with `after_seq` (its last seen sequence number) and the
 * host `epoch` it belongs to, and drops what it has seen already. When the host cannot continue (it
 * restarted: another epoch; or the events are no longer kept) it answers with a `thread.history`
 * reset, and the thread's views start over from it. Every request carries a `request_id`; its
 * promise settles on the host's `ack` or `error` with that id.
 */
export class HostClient {
  private url: string;
  private apiKey: string;
  private socket: WebSocketLike | null = null;
  /** Bumped per socket, so events and closes of an abandoned socket are ignored. */
  private generation = 0;
  private readonly threads = new Map<string, ThreadState>();
  private pending: Pending[] = [];
  private nextRequest = 0;
  /** Set by the first ack: the host answers requests by id, so events no longer settle them. */
  private echoesIds = false;
  private readonly listeners: { [K in keyof HostClientEventMap]?: Set<Listener<K>> } = {};
  private attempt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private everOpened = false;
  private disposed = false;
  private currentStatus: ConnectionStatus = "idle";
  /** Why the last connection attempt failed, for `connect_failed`. */
  private lastFailure = "";
  private servers: McpServerInfo[] = [];

  constructor(private readonly options: HostClientOptions) {
    this.url = options.url;
    this.apiKey = options.apiKey ?? "";
  }

  get status(): ConnectionStatus {
    return this.currentStatus;
  }

  /**
   * The host's MCP servers as it last listed them (`mcp.servers`): kept across reconnects until
   * the host lists them again; empty until it lists any (a host without MCP servers never does).
   */
  get mcpServers(): readonly McpServerInfo[] {
    return this.servers;
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

  /** Skips the backoff wait of a pending reconnect (the network came back). */
  retryNow(): void {
    if (this.disposed || this.socket || !this.reconnectTimer) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    this.open();
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
        Object.assign(state, { resync: true, lastSeq: -1, epoch: null });
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

  /** Starts a thread; resolves with its info once the host announced it to this client. */
  async startThread(): Promise<ThreadInfo> {
    const known = new Set(this.threads.keys());
    const answer = await this.send(
      { type: "thread.start" },
      {
        answeredBy: (event) => event.type === "thread.started" && !known.has(event.thread_id),
        timeoutMs: this.startTimeoutMs,
      },
    );
    return this.infoOf(answer);
  }

  /**
   * Follows a thread from its start (a saved session, or a live one of another face); resolves with
   * its info once its replay began. Views of it should start over.
   */
  async resumeThread(threadId: string): Promise<ThreadInfo> {
    const previous = this.threads.get(threadId);
    this.threads.set(threadId, { lastSeq: -1, epoch: null, resync: true, info: previous?.info ?? null });
    try {
      const answer = await this.send(
        { type: "thread.resume", thread_id: threadId, after_seq: -1 },
        {
          // Its start, or (when its first events are no longer kept) a history reset.
          answeredBy: (event) =>
            (event.type === "thread.started" || (event.type === "thread.history" && event.reset === true)) &&
            event.thread_id === threadId,
          timeoutMs: this.startTimeoutMs,
        },
      );
      return this.infoOf(answer, threadId);
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

  /** Saved and live threads, newest first; only `workspace`'s when given (an absolute path). */
  async list(workspace?: string): Promise<ThreadInfo[]> {
    const answer = await this.send(
      workspace === undefined ? { type: "thread.list" } : ({ type: "thread.list", workspace } as HostRequest),
      { answeredBy: (event) => event.type === "thread.list", settles: "event" },
    );
    return answer.type === "thread.list" ? answer.threads : [];
  }

  /**
   * Sends a request about a thread; resolves once it took effect (the host's ack, or the event it
   * caused on a host without acks), rejects with the host's error for it (`host_error`).
   */
  async request(request: ThreadRequest): Promise<void> {
    await this.send(request, { answeredBy: answeredBy(request) });
  }

  /** Type-ahead: the message being typed, as a draft. Nothing waits for an answer; none is owed. */
  draft(threadId: string, input: string): void {
    this.write({ type: "turn.draft", thread_id: threadId, input, request_id: this.requestId() });
  }

  /** Closes the connection for good; pending requests fail. Idempotent. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.abandonSocket();
    this.setStatus("closed");
  }

  private send(
    request: HostRequest,
    how: Partial<Pick<Pending, "answeredBy" | "settles" | "quiet">> & { timeoutMs?: number },
  ): Promise<Answer> {
    const requestId = this.requestId();
    this.write({ ...request, request_id: requestId });
    return new Promise((resolve, reject) => {
      // Added after sending: an answer cannot arrive before this returns to the event loop.
      const entry: Pending = {
        requestId,
        settles: how.settles ?? "ack",
        answeredBy: how.answeredBy ?? (() => false),
        quiet: how.quiet ?? false,
        resolve,
        reject,
        timer: setTimeout(
          () => {
            this.settle(entry);
            reject(new HostClientError("timeout", "Spark did not answer in time."));
          },
          how.timeoutMs ?? this.options.requestTimeoutMs ?? 15_000,
        ),
      };
      this.pending.push(entry);
    });
  }

  /** Writes one frame; throws `not_connected` while the socket is not open. */
  private write(frame: HostRequest & { request_id: string }): void {
    const socket = this.socket;
    if (!socket || this.currentStatus !== "open" || socket.readyState !== WS_OPEN) {
      throw new HostClientError(
        "not_connected",
        this.currentStatus === "reconnecting"
          ? "Reconnecting to Spark; try again in a moment."
          : "Not connected to Spark.",
      );
    }
    socket.send(JSON.stringify(frame));
  }

  private requestId(): string {
    return `r${++this.nextRequest}`;
  }

  private infoOf(answer: Answer, threadId?: string): ThreadInfo {
    if (answer.type === "thread.started") return answer.thread;
    if (answer.type === "thread.history" && answer.thread) return answer.thread;
    const id = threadId ?? (answer.type === "ack" ? answer.thread_id : undefined);
    const info = id === undefined ? null : this.threads.get(id)?.info;
    if (!info) throw new HostClientError("host_error", "The host acknowledged a thread it never announced.");
    return info;
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
      for (const [threadId, state] of this.threads) this.resubscribe(threadId, state);
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

  /** Resumes a followed thread after a reconnect: from its cursor, or from its start when resyncing. */
  private resubscribe(threadId: string, state: ThreadState): void {
    const cursor = state.resync
      ? { after_seq: -1 }
      : { after_seq: state.lastSeq, ...(state.epoch ? { epoch: state.epoch } : {}) };
    const request: HostRequest = { type: "thread.resume", thread_id: threadId, ...cursor };
    // Its answer is the replay itself; a failure (the thread was deleted meanwhile) is logged.
    this.send(request, { quiet: true }).catch((error: HostClientError) => {
      if (error.code === "host_error") this.emit("log", `Resuming ${threadId} failed: ${error.message}`);
    });
  }

  private onClosed(generation: number): void {
    if (generation !== this.generation) return;
    this.socket = null;
    this.failPending(new HostClientError("disconnected", "The connection to Spark closed."));
    if (this.disposed || (!this.everOpened && !this.options.retryFirstConnect)) {
      this.setStatus("closed");
      return;
    }
    const delay = this.backoff();
    this.attempt++;
    this.setStatus("reconnecting");
    this.emit("log", `Reconnecting in ${delay} ms`);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (!this.disposed) this.open();
    }, delay);
  }

  /** The delay before the next try: doubling from the first, capped, spread by the jitter. */
  private backoff(): number {
    const base = this.options.reconnectDelayMs ?? 250;
    const capped = Math.min(this.options.maxReconnectDelayMs ?? 5000, base * 2 ** this.attempt);
    const jitter = this.options.jitter ?? 0.25;
    const random = (this.options.random ?? Math.random)();
    return Math.round(capped * (1 - jitter + 2 * jitter * random));
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
    this.failPending(new HostClientError("disconnected", "The connection to Spark closed."));
  }

  private onMessage(data: string): void {
    let frame: IncomingFrame;
    try {
      frame = JSON.parse(data) as IncomingFrame;
    } catch {
      this.emit("log", `Ignored a frame that is not JSON: ${data.slice(0, 80)}`);
      return;
    }
    switch (frame.type) {
      case "ack": {
        this.echoesIds = true;
        const entry = this.pending.find((candidate) => candidate.requestId === frame.request_id);
        if (entry?.settles === "ack") {
          this.settle(entry);
          entry.resolve({
            type: "ack",
            ...(frame.thread_id === undefined ? {} : { thread_id: frame.thread_id }),
          });
        }
        return;
      }
      case "error":
        this.onError(frame);
        return;
      case "thread.list":
        this.emit("list", frame.threads);
        break;
      case "thread.deleted":
        this.threads.delete(frame.thread_id);
        this.emit("deleted", frame.thread_id);
        break;
      case "mcp.servers": {
        const decoded = decodeMcpServers(frame.servers);
        if (!decoded.ok) {
          this.emit("log", `Ignored an mcp.servers event: ${decoded.reason}`);
          return;
        }
        this.servers = decoded.servers;
        this.emit("mcp", decoded.servers);
        return;
      }
      default:
        if (!this.accept(frame)) return;
    }
    for (const entry of [...this.pending]) {
      if ((entry.settles === "event" || !this.echoesIds) && entry.answeredBy(frame)) {
        this.settle(entry);
        entry.resolve(frame);
      }
    }
  }

  /**
   * An error answers the request with its id. One without an id comes from a host that does not
   * echo ids: it answers the oldest request still waiting (the host answers in order).
   */
  private onError(frame: Extract<HostAnswer, { type: "error" }>): void {
    const { error } = frame;
    this.emit("log", `Host error ${error.code}: ${error.message}`);
    const entry =
      frame.request_id === undefined
        ? this.pending.find((candidate) => !candidate.quiet)
        : this.pending.find((candidate) => candidate.requestId === frame.request_id);
    if (!entry) {
      this.emit("error", error);
      return;
    }
    this.settle(entry);
    entry.reject(new HostClientError("host_error", error.message, error));
  }

  /** Dedupes a stamped event; true if it is new and was delivered. */
  private accept(event: StampedEvent): boolean {
    let state = this.threads.get(event.thread_id);
    if (!state) {
      // A thread this client just started: its first event. Others' events are not followed.
      if (event.type !== "thread.started" || event.seq !== 0) return false;
      state = { lastSeq: -1, epoch: null, resync: false, info: null };
      this.threads.set(event.thread_id, state);
    }
    if (event.type === "thread.started" || event.type === "thread.renamed") state.info = event.thread;
    if (event.type === "thread.history" && event.thread) state.info = event.thread;
    if (event.type === "thread.history" && event.reset) {
      // The host could not continue this client's events: its snapshot replaces what was seen.
      if (!state.resync) this.emit("reset", event.thread_id);
      Object.assign(state, { resync: false, lastSeq: event.seq, epoch: event.epoch });
      this.emit("event", event);
      return true;
    }
    if (state.resync) {
      if (event.type !== "thread.started") return false;
      Object.assign(state, { resync: false, lastSeq: -1, epoch: event.epoch });
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
    Object.assign(state, { resync: true, lastSeq: -1, epoch: null });
    this.emit("reset", threadId);
    // Not open: the next connection resumes it from its start (resync is set).
    if (this.currentStatus === "open") this.resubscribe(threadId, state);
  }

  private get startTimeoutMs(): number {
    return this.options.startTimeoutMs ?? 600_000;
  }

  private settle(entry: Pending): void {
    clearTimeout(entry.timer);
    this.pending = this.pending.filter((candidate) => candidate !== entry);
  }

  private failPending(error: HostClientError): void {
    const pending = this.pending;
    this.pending = [];
    for (const entry of pending) {
      clearTimeout(entry.timer);
      entry.reject(error);
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

/**
 * The event that shows a request took effect, for a host that does not echo request ids. A request
 * the host may answer with nothing visible to this client settles on the first event of its thread.
 */
function answeredBy(request: ThreadRequest): (event: HostEvent) => boolean {
  const of = (event: HostEvent) => "thread_id" in event && event.thread_id === request.thread_id;
  switch (request.type) {
    case "turn.start":
      return (event) => of(event) && event.type === "turn.started";
    case "turn.steer":
      return (event) => of(event) && (event.type === "turn.steered" || event.type === "turn.started");
    case "turn.queue":
      return (event) => of(event) && (event.type === "turn.queued" || event.type === "turn.started");
    case "turn.interrupt":
      return (event) => of(event) && event.type === "turn.completed";
    case "thread.undo":
      return (event) => of(event) && event.type === "patch.undone";
    case "thread.rename":
    case "thread.set_model":
      return (event) => of(event) && event.type === "thread.renamed";
    case "thread.delete":
      return (event) => event.type === "thread.deleted" && event.thread_id === request.thread_id;
    case "patch.accept":
    case "patch.reject":
      return (event) => of(event) && event.type === "patch.resolved" && event.item_id === request.item_id;
    case "subagent.cancel":
      return (event) =>
        of(event) && event.type === "subagent.completed" && event.subagent_id === request.subagent_id;
    case "approval.respond":
      return (event) =>
        of(event) && event.type === "approval.resolved" && event.approval_id === request.approval_id;
    default: {
      const unknown: never = request;
      throw new Error(`Unknown request ${JSON.stringify(unknown)}`);
    }
  }
}
