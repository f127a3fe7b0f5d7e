import type {
  HostEvent,
  McpServerInfo,
  ReviewReport,
  ReviewTarget,
  SessionDiff,
  ThreadInfo,
} from "../protocol/agent.js";
import { type HostRequest, MAX_FILE_MATCHES, type ThreadMcpServer } from "../protocol/agent-requests.js";
import { type DecodedCatalog, decodeCatalog } from "../protocol/catalog.js";
import type { WireError } from "../protocol/errors.js";
import { decodeMcpServers } from "../protocol/mcp-servers.js";
import { FollowedThreads, type ResumeCursor } from "./followed-threads.js";
import { HostClientError } from "./host-client-error.js";
import { type ConnectionStatus, HostConnection, type HostConnectionOptions } from "./host-connection.js";
import { type Ack, PendingRequests } from "./pending-requests.js";
import type { StampedEvent } from "./thread-view.js";

export type { HostClientErrorCode } from "./host-client-error.js";
export type { Ack, ConnectionStatus };
export { HostClientError };

export interface HostClientOptions extends HostConnectionOptions {
  /** How long a request waits for its answer (not starting or resuming a thread). Default: 15,000 ms. */
  requestTimeoutMs?: number;
}

/**
 * How long starting or resuming a thread waits for its answer: the host answers once the model has
 * loaded and warmed up, which on a first start can take minutes (the server's own bound on waiting
 * for a loading model).
 */
const START_TIMEOUT_MS = 600_000;

/** How long a review waits for its findings: a small model on a CPU reads and answers for minutes. */
const REVIEW_TIMEOUT_MS = 3_600_000;

/** What `thread.review` answers: the findings, and notes for a person (dropped findings, a cut diff). */
export type ThreadReview = ReviewReport & { notes: string[] };

export interface HostClientEventMap {
  /** A thread event of a followed thread, each exactly once and in order, across reconnects. */
  event: StampedEvent;
  status: ConnectionStatus;
  /** A host `error` that answers no pending request of this client. */
  error: WireError;
  list: ThreadInfo[];
  /** One session of the list, new or changed (`thread.listed`): add it, or replace it by id. */
  listed: ThreadInfo;
  deleted: string;
  /**
   * The client lost track of a thread (the server restarted under it, or the events it missed are
   * no longer kept): views of the thread start over, from its next `thread.started` or the
   * `thread.history` reset that follows.
   */
  reset: string;
  /** The host's MCP servers changed (a new list, whole); also {@link HostClient.mcpServers}. */
  mcp: McpServerInfo[];
  /** The host listed its skills and defined agents (`catalog`); also {@link HostClient.catalog}. */
  catalog: DecodedCatalog;
  /** How far the host's evaluation of the agent prompt is (`prompt.progress`); also {@link HostClient.promptProgress}. */
  prompt: PromptProgress;
  /** The models threads may switch to (`models`); also {@link HostClient.models}. */
  models: readonly string[];
  /** A line for the connection log. */
  log: string;
}

/** The agent prompt's evaluation on the host: tokens evaluated of those to evaluate. */
export interface PromptProgress {
  evaluated: number;
  total: number;
  done: boolean;
}

/** Host events that answer one request of one client, ahead of its `ack`. */
type AnswerType = "workspace.files" | "thread.diff" | "thread.review";

type Listener<K extends keyof HostClientEventMap> = (value: HostClientEventMap[K]) => void;

/** Requests a person makes while a thread runs; `thread.start`, `.resume` and `.list` have methods. */
export type ThreadRequest = Exclude<
  HostRequest,
  {
    type:
      | "thread.start"
      | "thread.resume"
      | "thread.list"
      | "turn.draft"
      | "thread.fork"
      | "thread.unsubscribe"
      | "workspace.files"
      | "thread.diff"
      | "thread.review";
  }
>;

/**
 * The one client of Spark's agent host, for every face. Over one WebSocket ({@link HostConnection},
 * which reconnects with backoff) it resumes every thread it follows with `after_seq` and the host
 * `epoch` it belongs to, and delivers each event once ({@link FollowedThreads}). Every request
 * carries a `request_id`; its promise settles on the host's `ack` or `error` with that id
 * ({@link PendingRequests}).
 */
export class HostClient {
  private readonly connection: HostConnection;
  private readonly requests: PendingRequests;
  /** Answers (`workspace.files`, `thread.diff`) that arrived before their request's `ack`, by request id. */
  private readonly answers = new Map<string, HostEvent>();
  /** Who hears a running review's `review.progress`, by request id. */
  private readonly reviewProgress = new Map<string, (message: string) => void>();
  private readonly followed: FollowedThreads;
  private readonly listeners: { [K in keyof HostClientEventMap]?: Set<Listener<K>> } = {};
  private servers: McpServerInfo[] = [];
  private listedCatalog: DecodedCatalog = { skills: [], agents: [] };
  private offered: readonly string[] = [];
  private prompt: PromptProgress | null = null;

  constructor(options: HostClientOptions) {
    this.requests = new PendingRequests(options.requestTimeoutMs ?? 15_000);
    this.followed = new FollowedThreads({
      event: (event) => this.emit("event", event),
      reset: (threadId) => this.emit("reset", threadId),
      resume: (threadId, cursor) => {
        // Not open: the next connection resumes it from the cursor.
        if (this.connection.status === "open") this.resume(threadId, cursor);
      },
      log: (line) => this.emit("log", line),
    });
    this.connection = new HostConnection(options, {
      status: (status) => {
        this.emit("status", status);
        if (status === "open")
          for (const [threadId, cursor] of this.followed.cursors()) this.resume(threadId, cursor);
      },
      frame: (data) => this.onFrame(data),
      lost: () =>
        this.requests.failAll(new HostClientError("disconnected", "The connection to Spark closed.")),
      log: (line) => this.emit("log", line),
    });
  }

  get status(): ConnectionStatus {
    return this.connection.status;
  }

  /**
   * The host's MCP servers as it last listed them (`mcp.servers`): kept across reconnects until
   * the host lists them again; empty until it lists any (a host without MCP servers never does).
   */
  get mcpServers(): readonly McpServerInfo[] {
    return this.servers;
  }

  /**
   * The models threads may switch to (`thread.set_model`), as the host last listed them (`models`,
   * on connecting); empty until it lists any (a host with one model never does).
   */
  get models(): readonly string[] {
    return this.offered;
  }

  /**
   * The host's skills and defined agents as it last listed them (`catalog`, on connecting); empty
   * until it lists any (a host without any never does).
   */
  get catalog(): DecodedCatalog {
    return this.listedCatalog;
  }

  /**
   * How far the host's evaluation of the agent prompt is, as it last said (`prompt.progress`);
   * null until it says (a host that had nothing to evaluate, or an older one, never does).
   */
  get promptProgress(): PromptProgress | null {
    return this.prompt;
  }

  /** The host endpoint in use. */
  get endpoint(): string {
    return this.connection.endpoint;
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
    return this.connection.connect();
  }

  /** Skips the backoff wait of a pending reconnect (the network came back). */
  retryNow(): void {
    this.connection.retryNow();
  }

  /**
   * Points the client at another endpoint (a restarted server). With `fresh`, every followed thread
   * is replayed from its start, since sequence numbers of another server mean nothing here.
   */
  retarget(url: string, options: { fresh?: boolean; apiKey?: string } = {}): Promise<void> {
    if (options.fresh) this.followed.restartAll();
    return this.connection.retarget(url, options.apiKey);
  }

  /** The last sequence number seen of a thread (-1: none). */
  lastSeq(threadId: string): number {
    return this.followed.lastSeq(threadId);
  }

  /**
   * Starts a thread (with `worktree`, in a git worktree of the host's repository: see
   * `thread.start`); resolves with its info once the host announced it to this client.
   */
  async startThread(
    options: { worktree?: { name?: string }; mcpServers?: ThreadMcpServer[] } = {},
  ): Promise<ThreadInfo> {
    const ack = await this.send(
      {
        type: "thread.start",
        ...(options.worktree ? { worktree: options.worktree } : {}),
        ...(options.mcpServers?.length ? { mcp_servers: options.mcpServers } : {}),
      },
      START_TIMEOUT_MS,
    );
    return this.announced(ack.thread_id);
  }

  /**
   * Follows a thread from its start (a saved session, or a live one of another face); resolves with
   * its info once its replay began. Views of it should start over.
   */
  async resumeThread(threadId: string): Promise<ThreadInfo> {
    const undo = this.followed.followFromStart(threadId);
    try {
      await this.send({ type: "thread.resume", thread_id: threadId, after_seq: -1 }, START_TIMEOUT_MS);
      return this.announced(threadId);
    } catch (error) {
      undo();
      throw error;
    }
  }

  /**
   * Forks a thread (see `thread.fork`) from the turn its user message `itemId` starts (default:
   * the whole conversation); resolves with the fork's info once the host announced it.
   */
  async forkThread(threadId: string, itemId?: string): Promise<ThreadInfo> {
    const request = { type: "thread.fork" as const, thread_id: threadId };
    const ack = await this.send(
      itemId === undefined ? request : { ...request, item_id: itemId },
      START_TIMEOUT_MS,
    );
    return this.announced(ack.thread_id);
  }

  /**
   * Stops delivering a thread's events and tells the host (`thread.unsubscribe`), which then sends
   * none and may let the thread go once it is idle. Nothing waits for the answer.
   */
  forget(threadId: string): void {
    this.followed.forget(threadId);
    if (this.connection.status !== "open") return;
    this.send({ type: "thread.unsubscribe", thread_id: threadId }).catch((error: HostClientError) => {
      this.emit("log", `Unsubscribing from ${threadId} failed: ${error.message}`);
    });
  }

  /** Saved and live threads, newest first; only `workspace`'s when given (an absolute path). */
  async list(workspace?: string): Promise<ThreadInfo[]> {
    // The host sends the list, then acks: the last list before the ack answers this request.
    const lists: ThreadInfo[][] = [];
    const off = this.on("list", (threads) => lists.push(threads));
    try {
      await this.send(workspace === undefined ? { type: "thread.list" } : { type: "thread.list", workspace });
    } finally {
      off();
    }
    const threads = lists.at(-1);
    if (!threads) throw new HostClientError("host_error", "The host acknowledged a list it never sent.");
    return threads;
  }

  /**
   * Sends a request about a thread; resolves with the host's `ack` once it took effect (for
   * `turn.start` and `turn.queue` it names the turn: `turn_id`), rejects with the host's error for
   * it (`host_error`, with the error's `status`).
   */
  async request(request: ThreadRequest): Promise<Ack> {
    return await this.send(request);
  }

  /**
   * The files of the thread's workspace that match `query` best (for an `@` mention picker), best
   * first, relative to the workspace. `limit` default: 8 (at most 50).
   */
  async workspaceFiles(threadId: string, query: string, limit?: number): Promise<string[]> {
    const request = { type: "workspace.files" as const, thread_id: threadId, query };
    const answer = await this.ask(limit === undefined ? request : { ...request, limit }, "workspace.files");
    const valid =
      Array.isArray(answer.files) &&
      answer.files.length <= MAX_FILE_MATCHES &&
      answer.files.every((file) => typeof file === "string" && file.length <= 4096);
    if (!valid)
      throw new HostClientError("host_error", "The host answered workspace.files with no list of files.");
    return answer.files;
  }

  /** What the thread's session changed so far (`/diff`). */
  async sessionDiff(threadId: string): Promise<SessionDiff> {
    const { files, omitted, notes } = await this.ask(
      { type: "thread.diff", thread_id: threadId },
      "thread.diff",
    );
    if (!Array.isArray(files) || !Array.isArray(omitted) || !Array.isArray(notes))
      throw new HostClientError("host_error", "The host answered thread.diff with no diff.");
    return { files, omitted, notes };
  }

  /**
   * Reviews `target` (default: the uncommitted changes) in the thread's workspace, read-only, on
   * its model (`/review`); `onProgress` hears each step. Rejects while a turn runs.
   */
  async review(
    threadId: string,
    target?: ReviewTarget,
    onProgress: (message: string) => void = () => {},
  ): Promise<ThreadReview> {
    const requestId = this.requests.nextId();
    this.reviewProgress.set(requestId, onProgress);
    let answer: HostEvent | undefined;
    try {
      const request = { type: "thread.review", thread_id: threadId, ...(target ? { target } : {}) };
      this.connection.send(JSON.stringify({ ...request, request_id: requestId }));
      await this.requests.wait(requestId, REVIEW_TIMEOUT_MS);
    } finally {
      this.reviewProgress.delete(requestId);
      answer = this.answers.get(requestId);
      this.answers.delete(requestId);
    }
    if (answer?.type !== "thread.review" || !Array.isArray(answer.findings) || !Array.isArray(answer.notes))
      throw new HostClientError("host_error", "The host acknowledged thread.review without its findings.");
    const { type: _, request_id: __, thread_id: ___, ...review } = answer;
    return review;
  }

  /** Type-ahead: the message being typed, as a draft. Nothing waits for an answer. */
  draft(threadId: string, input: string): void {
    this.connection.send(
      JSON.stringify({ type: "turn.draft", thread_id: threadId, input, request_id: this.requests.nextId() }),
    );
  }

  /** Closes the connection for good; pending requests fail. Idempotent. */
  dispose(): void {
    this.connection.dispose();
  }

  /** Sends a request with a fresh `request_id` and waits for the host's answer to it. */
  private send(request: HostRequest, timeoutMs?: number): Promise<Ack> {
    const requestId = this.requests.nextId();
    this.connection.send(JSON.stringify({ ...request, request_id: requestId }));
    return this.requests.wait(requestId, timeoutMs);
  }

  /** Sends a request the host answers with an event of `type` before its `ack`; resolves with that event. */
  private async ask<T extends AnswerType>(
    request: HostRequest,
    type: T,
  ): Promise<Extract<HostEvent, { type: T }>> {
    const requestId = this.requests.nextId();
    this.connection.send(JSON.stringify({ ...request, request_id: requestId }));
    let answer: HostEvent | undefined;
    try {
      await this.requests.wait(requestId);
    } finally {
      answer = this.answers.get(requestId);
      this.answers.delete(requestId);
    }
    if (answer?.type !== type)
      throw new HostClientError("host_error", `The host acknowledged ${request.type} without answering it.`);
    return answer as Extract<HostEvent, { type: T }>;
  }

  /** Resumes a followed thread on this connection; its answer is the replay itself. */
  private resume(threadId: string, cursor: ResumeCursor): void {
    this.send({ type: "thread.resume", thread_id: threadId, ...cursor }).catch((error: HostClientError) => {
      // The thread was deleted meanwhile, say; a lost connection resumes it again.
      if (error.code === "host_error") this.emit("log", `Resuming ${threadId} failed: ${error.message}`);
    });
  }

  private announced(threadId: string | undefined): ThreadInfo {
    const info = threadId === undefined ? null : this.followed.info(threadId);
    if (!info) throw new HostClientError("host_error", "The host acknowledged a thread it never announced.");
    return info;
  }

  private onFrame(data: string): void {
    let frame: HostEvent;
    try {
      frame = JSON.parse(data) as HostEvent;
    } catch {
      this.emit("log", `Ignored a frame that is not JSON: ${data.slice(0, 80)}`);
      return;
    }
    switch (frame.type) {
      case "ack":
        this.requests.ack(frame);
        return;
      case "error":
        this.emit("log", `Host error ${frame.error.code}: ${frame.error.message}`);
        if (!this.requests.error(frame)) this.emit("error", frame.error);
        return;
      case "thread.list":
        this.emit("list", frame.threads);
        return;
      case "review.progress": {
        const hear =
          typeof frame.request_id === "string" ? this.reviewProgress.get(frame.request_id) : undefined;
        if (typeof frame.message === "string") hear?.(frame.message.slice(0, 500));
        return;
      }
      case "workspace.files":
      case "thread.diff":
      case "thread.review":
        // Kept for the request waiting for it (see ask); an answer nobody waits for is dropped.
        if (typeof frame.request_id === "string" && this.requests.waiting(frame.request_id))
          this.answers.set(frame.request_id, frame);
        return;
      case "thread.listed":
        this.emit("listed", frame.thread);
        return;
      case "thread.deleted":
        this.followed.forget(frame.thread_id);
        this.emit("deleted", frame.thread_id);
        return;
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
      case "catalog": {
        const decoded = decodeCatalog(frame.skills, frame.agents);
        if (!decoded.ok) {
          this.emit("log", `Ignored a catalog event: ${decoded.reason}`);
          return;
        }
        this.listedCatalog = decoded.catalog;
        this.emit("catalog", decoded.catalog);
        return;
      }
      case "models": {
        const models = decodeModels(frame.models);
        if (!models) {
          this.emit("log", "Ignored a models event: not a list of model names");
          return;
        }
        this.offered = models;
        this.emit("models", models);
        return;
      }
      case "prompt.progress": {
        const { evaluated_tokens: evaluated, total_tokens: total, done } = frame;
        const count = (n: unknown) => Number.isSafeInteger(n) && (n as number) >= 0;
        if (!count(evaluated) || !count(total) || evaluated > total || typeof done !== "boolean") {
          this.emit("log", "Ignored a prompt.progress event: not counts of evaluated and total tokens");
          return;
        }
        this.prompt = { evaluated, total, done };
        this.emit("prompt", this.prompt);
        return;
      }
      default:
        this.followed.accept(frame);
    }
  }

  private emit<K extends keyof HostClientEventMap>(type: K, value: HostClientEventMap[K]): void {
    const set = this.listeners[type] as Set<Listener<K>> | undefined;
    for (const listener of [...(set ?? [])]) listener(value);
  }
}

/** A `models` event's list, when it is one: at most 64 names as `thread.set_model` accepts them. */
function decodeModels(models: unknown): readonly string[] | null {
  if (!Array.isArray(models) || models.length > 64) return null;
  const valid = models.every(
    (name) => typeof name === "string" && name.length > 0 && name.length <= 128 && /^[\w.:/-]+$/.test(name),
  );
  return valid ? (models as string[]) : null;
}
