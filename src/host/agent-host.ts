import { randomBytes } from "node:crypto";
import type { AgentThread } from "../agent/agent-thread.js";
import type { Catalog } from "../agent/definitions/catalog.js";
import type { McpServerList } from "../agent/mcp/mcp-server-list.js";
import type { HostEvent, HostThreadEvent, ThreadEvent, ThreadInfo } from "../protocol/agent.js";
import { HOST_REQUEST_SCHEMAS, type HostRequest, type HostRequestType } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";
import { DEFAULT_JSON_LIMITS, parseUntrustedJson } from "../protocol/json-guard.js";
import { validate } from "../protocol/validate.js";
import { HostClients, type HostSocket } from "./host-clients.js";
import { errorEvent, requestIdOf } from "./host-errors.js";
import type { HostThreadSource } from "./host-thread-source.js";
import { ReplayBuffer } from "./replay-buffer.js";
import { forkedInfo, forkedItems } from "./thread-fork.js";
import { handleThreadRequest } from "./thread-requests.js";
import { ThreadReviews } from "./thread-review.js";

/** Threads an agent host keeps open at once unless told otherwise (`AgentHostOptions.maxThreads`). */
export const DEFAULT_MAX_THREADS = 32;

export interface AgentHostOptions {
  /**
   * UTF-8 bytes of stamped event lines kept per thread for clients that reconnect; a client
   * resuming from before them gets the thread's history instead. Default: 4 MiB.
   */
  replayBytes?: number;
  /**
   * Threads hosted at once. Opening another lets the least recently active idle one go; with none
   * idle, `thread.start`/`thread.resume` answer `limit_reached`. Default: 32.
   */
  maxThreads?: number;
  /**
   * A thread with no subscriber, no running turn, nothing queued and no running sub-agent is let go
   * after this long (it stays resumable from its transcript). Default: 10 minutes.
   */
  idleMs?: number;
  /**
   * The agent's MCP servers, listed to every client (`mcp.servers`): on connecting, and again after
   * each burst of changes. Default: none, and no `mcp.servers` is sent (clients list no servers).
   */
  mcp?: McpServerList;
  /**
   * The workspace's skills and defined agents, listed to each client when it connects (`catalog`).
   * Default: none yet ({@link AgentHost.listCatalog} sets them); a host with none sends none.
   */
  catalog?: Catalog;
  /** The models (tiers) threads may switch to, listed to each client when it connects (`models`). */
  models?: readonly string[];
  /**
   * Bytes a client may leave unread: a client whose socket still holds more than this when the
   * next event is due is closed with SLOW_CLIENT_CLOSE_CODE (host-clients.ts; it resumes by `seq`).
   * Default: 8 MiB.
   */
  clientBufferBytes?: number;
}

interface HostedThread {
  thread: AgentThread;
  seq: number;
  /** Recent stamped events, for resuming clients. */
  replay: ReplayBuffer;
  subscribers: Set<HostSocket>;
  /** When an event was last published or a subscriber last came or went (ms since the epoch). */
  lastActive: number;
  /** Stops listening to the thread (when it is deleted or let go). */
  unsubscribe: () => void;
  /** The title clients were last told of (`thread.started` or `thread.renamed`). */
  announcedTitle: string;
  /** Whether every client was told of it (`thread.listed`, once it has a user message). */
  listed: boolean;
}

/**
 * Agent threads over WebSocket for the web app and editors. Every event of a thread gets a
 * per-thread sequence number; a client that reconnects resumes with `after_seq` and receives
 * exactly the events it missed, so streamed text is neither lost nor repeated. Every event also
 * carries the host's `epoch`; a client whose events cannot be continued (another epoch, a `seq`
 * never reached, or events no longer kept) gets the thread's history as a reset instead.
 */
export class AgentHost {
  /** Chosen at random per host: sequence numbers of another epoch (a restarted server) mean nothing. */
  readonly epoch = `ep_${randomBytes(8).toString("hex")}`;
  private readonly threads = new Map<string, HostedThread>();
  /** Threads being created or loaded, counted against `maxThreads`. */
  private opening = 0;
  /**
   * Saved threads being loaded, by id: a second `thread.resume` of one joins the first's load, so
   * one thread (one transcript writer, sandbox, set of tools) exists per id.
   */
  private readonly resuming = new Map<string, Promise<HostedThread>>();
  private readonly replayBytes: number;
  private readonly maxThreads: number;
  private readonly idleMs: number;
  private readonly sweeper: ReturnType<typeof setInterval>;
  private readonly clients: HostClients;
  private readonly reviews: ThreadReviews;
  /** Aborted when the client goes away: what a client's long requests (reviews) stop on. */
  private readonly clientGone = new WeakMap<HostSocket, AbortSignal>();

  constructor(
    private readonly source: HostThreadSource,
    options: AgentHostOptions = {},
  ) {
    this.replayBytes = options.replayBytes ?? 4 * 1024 * 1024;
    this.maxThreads = options.maxThreads ?? DEFAULT_MAX_THREADS;
    this.idleMs = options.idleMs ?? 10 * 60_000;
    this.sweeper = setInterval(() => this.evictIdle(), Math.max(1000, Math.min(this.idleMs, 60_000)));
    this.sweeper.unref();
    this.reviews = new ThreadReviews(source);
    this.clients = new HostClients({
      clientBufferBytes: options.clientBufferBytes ?? 8 * 1024 * 1024,
      mcp: options.mcp,
    });
    if (options.catalog) this.listCatalog(options.catalog);
    if (options.models) this.listModels(options.models);
  }

  /** Lists the models threads may switch to (`models`), to every client now and on connecting. */
  listModels(models: readonly string[]): void {
    this.clients.listModels(models);
  }

  /** Lists `catalog` to every client, now and on connecting (once the runtime has read it). */
  listCatalog(catalog: Catalog): void {
    this.clients.listCatalog(catalog);
  }

  /** Tells every client how far the agent prompt's evaluation is (`prompt.progress`). */
  showPromptProgress(progress: { evaluated: number; total: number; done: boolean }): void {
    this.clients.showPromptProgress(progress);
  }

  /** Serves one client connection. */
  accept(socket: HostSocket): void {
    // A protocol violation closes this connection (ws sends the close code); it must not stop the host.
    socket.on("error", () => {});
    socket.on("message", (data, isBinary) => void this.onMessage(socket, data, isBinary));
    this.clients.add(socket);
    const gone = new AbortController();
    this.clientGone.set(socket, gone.signal);
    socket.on("close", () => {
      gone.abort();
      this.clients.delete(socket);
      for (const hosted of this.threads.values())
        if (hosted.subscribers.delete(socket)) hosted.lastActive = Date.now();
    });
  }

  /** Interrupts every running turn (server shutdown). */
  interruptAll(): void {
    for (const hosted of this.threads.values()) hosted.thread.interrupt();
  }

  /** Threads hosted now. */
  get size(): number {
    return this.threads.size;
  }

  /** Lets go every thread idle for `idleMs` (run every minute or sooner; callable any time). */
  evictIdle(now: number = Date.now()): void {
    for (const hosted of [...this.threads.values()]) {
      if (isIdle(hosted) && now - hosted.lastActive >= this.idleMs) this.release(hosted);
    }
  }

  /** Stops the idle sweep and listening to the MCP servers. Idempotent. */
  dispose(): void {
    clearInterval(this.sweeper);
    this.clients.dispose();
  }

  /**
   * Handles one request; answers it with an `ack` once it took effect, or with an `error`, each
   * carrying its `request_id` (no ack for a request without one). An error names the request even
   * when the request is otherwise unusable (unknown type, invalid fields), if its id is valid.
   */
  private async onMessage(socket: HostSocket, data: Buffer, isBinary: boolean): Promise<void> {
    let requestId: string | undefined;
    let answered = false;
    const acknowledge: Acknowledge = (fields) => {
      if (answered || requestId === undefined) return;
      answered = true;
      this.clients.send(
        socket,
        JSON.stringify({ type: "ack", request_id: requestId, ...fields } satisfies HostEvent),
      );
    };
    try {
      if (isBinary) throw new SparkError("invalid_event", "Messages are JSON text frames.");
      const raw = parseUntrustedJson(data.toString("utf8"), DEFAULT_JSON_LIMITS);
      requestId = requestIdOf(raw);
      const threadId = await this.handle(socket, raw, acknowledge);
      acknowledge(threadId ? { thread_id: threadId } : {});
    } catch (error) {
      if (!answered) this.clients.send(socket, errorEvent(error, requestId));
    }
  }

  /**
   * Carries out one request; resolves with the thread it acted on, if any. A request whose answer
   * must come before later events (`turn.start`) answers through `acknowledge` itself.
   */
  private async handle(
    socket: HostSocket,
    raw: unknown,
    acknowledge: Acknowledge,
  ): Promise<string | undefined> {
    const type = (raw as { type?: unknown } | null)?.type;
    if (typeof type !== "string" || !Object.hasOwn(HOST_REQUEST_SCHEMAS, type)) {
      throw new SparkError("unknown_event_type", `Unknown message type ${JSON.stringify(type)}.`, {
        param: "type",
      });
    }
    const request = validate(
      HOST_REQUEST_SCHEMAS[type as HostRequestType],
      raw,
      "invalid_event",
    ) as HostRequest;
    switch (request.type) {
      case "thread.start": {
        const { worktree, mcp_servers: mcpServers } = request;
        const hosted = this.host(
          await this.open(() =>
            this.source.create({ ...(worktree ? { worktree } : {}), ...(mcpServers ? { mcpServers } : {}) }),
          ),
        );
        this.subscribe(socket, hosted, -1, this.epoch);
        return hosted.thread.info.id;
      }
      case "thread.resume": {
        const hosted = this.threads.get(request.thread_id) ?? (await this.load(request.thread_id));
        this.subscribe(socket, hosted, request.after_seq ?? -1, request.epoch);
        return request.thread_id;
      }
      case "thread.unsubscribe": {
        const hosted = this.threads.get(request.thread_id);
        if (hosted?.subscribers.delete(socket)) hosted.lastActive = Date.now();
        return request.thread_id;
      }
      case "thread.fork": {
        const parent = this.get(request.thread_id).thread;
        const items = forkedItems(parent, request.item_id);
        if (!this.source.fork) throw new SparkError("invalid_request", "This host cannot fork threads.");
        const fork = this.host(await this.open(() => this.source.fork!(forkedInfo(parent.info), items)));
        this.subscribe(socket, fork, -1, this.epoch);
        this.announceSession(fork);
        return fork.thread.info.id;
      }
      case "thread.list":
        this.clients.setListWorkspace(socket, request.workspace);
        await this.sendList(socket);
        return undefined;
      case "turn.start":
      case "thread.set_mode":
      case "turn.steer":
      case "turn.queue":
      case "turn.interrupt":
      case "turn.draft":
      case "approval.respond":
      case "subagent.cancel":
      case "thread.undo":
      case "thread.rewind":
      case "thread.compact":
      case "patch.accept":
      case "patch.reject":
      case "thread.set_model": {
        const hosted = this.get(request.thread_id);
        await handleThreadRequest(hosted.thread, request, {
          publish: (event) => this.publish(hosted, event),
          models: () => this.source.models?.() ?? [],
          acknowledge: (fields) => acknowledge({ thread_id: request.thread_id, ...fields }),
        });
        if (request.type === "thread.set_mode" || request.type === "thread.set_model")
          await this.source.saveInfo?.(hosted.thread);
        break;
      }
      case "workspace.files": {
        const { thread } = this.get(request.thread_id);
        const files = await thread.workspaceFiles(request.query, request.limit);
        this.answer(socket, {
          type: "workspace.files",
          request_id: request.request_id,
          query: request.query,
          files,
        });
        break;
      }
      case "thread.diff": {
        const { thread } = this.get(request.thread_id);
        const diff = await thread.sessionDiff();
        this.answer(socket, {
          type: "thread.diff",
          request_id: request.request_id,
          thread_id: request.thread_id,
          ...diff,
        });
        break;
      }
      case "thread.review": {
        const { thread } = this.get(request.thread_id);
        // The review stops when the client that asked goes away.
        const gone = this.clientGone.get(socket) ?? AbortSignal.abort();
        await this.reviews.review(thread, request, (event) => this.answer(socket, event), gone);
        break;
      }
      case "thread.rename": {
        const hosted = this.threads.get(request.thread_id);
        if (hosted) hosted.thread.info.title = request.title;
        const info = await this.source.rename(request.thread_id, request.title);
        if (!hosted && !info)
          throw new SparkError("not_found", `No thread ${request.thread_id}.`, { param: "thread_id" });
        if (hosted) this.announceTitle(hosted);
        await this.sendList(socket);
        break;
      }
      case "thread.delete": {
        const hosted = this.threads.get(request.thread_id);
        if (hosted?.thread.busy)
          throw new SparkError("response_in_progress", "A turn is running; interrupt it before deleting.", {
            param: "thread_id",
          });
        const removed = await this.source.remove(request.thread_id);
        if (!hosted && !removed)
          throw new SparkError("not_found", `No thread ${request.thread_id}.`, { param: "thread_id" });
        const line = JSON.stringify({
          type: "thread.deleted",
          thread_id: request.thread_id,
        } satisfies HostEvent);
        for (const subscriber of new Set([socket, ...(hosted?.subscribers ?? [])]))
          this.clients.send(subscriber, line);
        if (hosted) {
          hosted.unsubscribe();
          this.threads.delete(request.thread_id);
        }
        await this.sendList(socket);
        break;
      }
      default: {
        const unreachable: never = request;
        throw new Error(`Unhandled ${JSON.stringify(unreachable)}`);
      }
    }
    return request.thread_id;
  }

  /** Sends one client the event that answers its request (before the request's `ack`). */
  private answer(socket: HostSocket, event: HostEvent): void {
    this.clients.send(socket, JSON.stringify(event));
  }

  /**
   * Live threads first (most recently updated first), then saved ones; only the workspace the
   * client asked for, if it did, and never a live thread without a user message (the source keeps
   * no transcript of those).
   */
  private async sendList(socket: HostSocket): Promise<void> {
    const workspace = this.clients.listWorkspace(socket);
    const inWorkspace = (info: ThreadInfo) => workspace === undefined || info.cwd === workspace;
    const live = [...this.threads.values()]
      .filter((h) => hasUserMessage(h.thread))
      .map((h) => ({ ...h.thread.info }))
      .filter(inWorkspace)
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
    const saved = (await this.source.list()).filter(
      (info) => !this.threads.has(info.id) && inWorkspace(info),
    );
    this.clients.send(
      socket,
      JSON.stringify({ type: "thread.list", threads: [...live, ...saved] } satisfies HostEvent),
    );
  }

  private get(threadId: string): HostedThread {
    const hosted = this.threads.get(threadId);
    if (!hosted) {
      throw new SparkError("not_found", `No thread ${threadId} is open; start or resume it first.`, {
        param: "thread_id",
      });
    }
    return hosted;
  }

  /**
   * Loads saved thread `threadId` and hosts it; concurrent calls for one id share one load (the
   * later ones would otherwise make threads of their own, with their own transcript writers,
   * sandboxes and tools, and leave them running unhosted).
   */
  private load(threadId: string): Promise<HostedThread> {
    let loading = this.resuming.get(threadId);
    if (!loading) {
      loading = this.open(() => this.source.resume(threadId))
        .then((thread) => {
          if (!thread) throw new SparkError("not_found", `No thread ${threadId}.`, { param: "thread_id" });
          return this.host(thread);
        })
        .finally(() => this.resuming.delete(threadId));
      this.resuming.set(threadId, loading);
    }
    return loading;
  }

  /**
   * Creates or loads a thread once there is room for it: the least recently active idle thread is
   * let go at the cap; with none idle, `limit_reached`.
   */
  private async open<T>(load: () => Promise<T>): Promise<T> {
    if (this.threads.size + this.opening >= this.maxThreads) {
      const idle = [...this.threads.values()].filter(isIdle).sort((a, b) => a.lastActive - b.lastActive)[0];
      if (!idle) {
        throw new SparkError(
          "limit_reached",
          `${this.maxThreads} threads are open and busy; close one (or let it finish) and try again.`,
        );
      }
      this.release(idle);
    }
    this.opening++;
    try {
      return await load();
    } finally {
      this.opening--;
    }
  }

  private release(hosted: HostedThread): void {
    const id = hosted.thread.info.id;
    hosted.unsubscribe();
    this.threads.delete(id);
    this.source.release?.(id);
  }

  private host(thread: AgentThread): HostedThread {
    const hosted: HostedThread = {
      thread,
      seq: -1,
      replay: new ReplayBuffer(this.replayBytes),
      subscribers: new Set(),
      lastActive: Date.now(),
      unsubscribe: () => {},
      announcedTitle: thread.info.title,
      listed: hasUserMessage(thread),
    };
    this.threads.set(thread.info.id, hosted);
    this.publish(hosted, { type: "thread.started", thread: { ...thread.info } });
    // A resumed session: its items so far, so a client can show them.
    if (thread.history.length > 0)
      this.publish(hosted, { type: "thread.history", items: [...thread.history] });
    hosted.unsubscribe = thread.on((event) => {
      this.publish(hosted, event);
      if (!hosted.listed && hasUserMessage(thread)) {
        hosted.listed = true;
        this.announceSession(hosted);
      }
      // The thread titles itself from its first message: every face hears of it.
      if (thread.info.title !== hosted.announcedTitle) this.announceTitle(hosted);
      // A finished turn moves the session's `updatedAt`.
      else if (event.type === "turn.completed" && hosted.listed) this.announceSession(hosted);
    });
    return hosted;
  }

  /**
   * A listed session is new or changed (its first user message, its title, a finished turn): every
   * client, not only its subscribers, gets its entry alone (`thread.listed`), unless it last listed
   * another workspace. Nothing is read from disk for it.
   */
  private announceSession(hosted: HostedThread): void {
    this.clients.announceSession({ ...hosted.thread.info });
  }

  private announceTitle(hosted: HostedThread): void {
    hosted.announcedTitle = hosted.thread.info.title;
    this.publish(hosted, { type: "thread.renamed", thread: { ...hosted.thread.info } });
    if (hosted.listed) this.announceSession(hosted);
  }

  private publish(hosted: HostedThread, event: ThreadEvent | HostThreadEvent): void {
    hosted.seq++;
    hosted.lastActive = Date.now();
    const line = this.stamp(hosted, event);
    hosted.replay.push(line);
    for (const socket of hosted.subscribers) this.clients.send(socket, line);
  }

  private stamp(hosted: HostedThread, event: ThreadEvent | HostThreadEvent): string {
    return JSON.stringify({
      ...event,
      thread_id: hosted.thread.info.id,
      seq: hosted.seq,
      epoch: this.epoch,
    } satisfies HostEvent);
  }

  /**
   * Sends every event after `afterSeq`, then live ones. When they cannot be continued (`epoch` is
   * another host's, `afterSeq` is beyond this one's, or events after it are no longer kept), sends
   * a `thread.history` reset instead: every item so far, as of the newest `seq`.
   */
  private subscribe(socket: HostSocket, hosted: HostedThread, afterSeq: number, epoch?: string): void {
    const continues = (epoch === undefined || epoch === this.epoch) && afterSeq <= hosted.seq;
    const missed = continues ? hosted.replay.since(afterSeq + 1) : null;
    if (missed) for (const line of missed) this.clients.send(socket, line, false);
    else {
      const { thread } = hosted;
      this.clients.send(
        socket,
        this.stamp(hosted, {
          type: "thread.history",
          items: [...thread.history],
          reset: true,
          thread: { ...thread.info },
        }),
        false,
      );
    }
    hosted.subscribers.add(socket);
    hosted.lastActive = Date.now();
  }
}

/** Answers the request being handled with an `ack` carrying `fields`; later calls do nothing. */
type Acknowledge = (fields: { thread_id?: string; turn_id?: string }) => void;

function hasUserMessage(thread: AgentThread): boolean {
  return thread.history.some((item) => item.type === "user_message");
}

/** Nothing would be lost by letting the thread go: it can be resumed from its transcript. */
function isIdle({ thread, subscribers }: HostedThread): boolean {
  return (
    subscribers.size === 0 &&
    !thread.busy &&
    thread.queuedTurns === 0 &&
    !thread.subAgents.some((sub) => sub.status === "running")
  );
}
