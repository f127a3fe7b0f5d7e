import { type HostClient, HostClientError, type ThreadRequest } from "../client-core/host-client.js";
import type { StampedEvent } from "../client-core/thread-view.js";
import type {
  AgentMode,
  RewindRestore,
  SubAgentInfo,
  ThreadEvent,
  ThreadInfo,
  ThreadItem,
} from "../protocol/agent.js";
import type { TurnToolChoice } from "../protocol/agent-requests.js";
import { SparkError, type SparkErrorCode } from "../protocol/errors.js";
import type { TerminalThread } from "./terminal-thread.js";

type Listener = (event: ThreadEvent) => void;

/** The host's own thread events that the terminal's views do not take. */
const HOST_ONLY = new Set([
  "thread.started",
  "thread.history",
  "thread.renamed",
  "patch.undone",
  "patch.resolved",
]);

/**
 * A thread on an agent host, with the terminal's thread surface: keys become host requests, the
 * host's events become thread events. Every face subscribed to the thread sees and acts on the same
 * running turn. A request the host refuses is shown as a notice (requests that a person makes with
 * a key have no caller to throw to).
 */
export class HostThread implements TerminalThread {
  private readonly listeners = new Set<Listener>();
  private readonly items: ThreadItem[] = [];
  private readonly approvals = new Set<string>();
  private readonly subs = new Map<string, SubAgentInfo>();
  private running = 0;
  private queued = 0;
  private lastUndone: string[] = [];
  private lastRewound: { paths: string[]; text: string } = { paths: [], text: "" };
  /** Resolved and replaced whenever the thread becomes idle. */
  private idleWaiters: (() => void)[] = [];
  private readonly unsubscribe: () => void;
  private notices = 0;

  private constructor(
    private readonly client: HostClient,
    private current: ThreadInfo,
  ) {
    const offEvent = client.on("event", (event) => this.onEvent(event));
    const offDeleted = client.on("deleted", (threadId) => {
      if (threadId === this.id) this.report(new Error("The thread was deleted (from another face)."));
    });
    // A host error that answers none of this client's requests: shown, never dropped.
    const offError = client.on("error", (wire) => this.report(new Error(wire.message)));
    this.unsubscribe = () => {
      offEvent();
      offDeleted();
      offError();
    };
  }

  /**
   * Starts a new thread on the host (`threadId` absent) or follows one (a live thread of another
   * face, or a saved session). Resolves once its `thread.started` and replay have arrived.
   */
  static open(client: HostClient, threadId?: string): Promise<HostThread> {
    return HostThread.follow(client, () => (threadId ? client.resumeThread(threadId) : client.startThread()));
  }

  /** Forks `threadId` from the turn its user message `itemId` starts (default: all of it). */
  static fork(client: HostClient, threadId: string, itemId?: string): Promise<HostThread> {
    return HostThread.follow(client, () => client.forkThread(threadId, itemId));
  }

  private static async follow(client: HostClient, announce: () => Promise<ThreadInfo>): Promise<HostThread> {
    let thread: HostThread | null = null;
    const early: StampedEvent[] = [];
    // Events before the answer belong to the thread being opened: collected, then replayed.
    const collect = client.on("event", (event) => {
      if (!thread) early.push(event);
    });
    try {
      const info = await announce();
      thread = new HostThread(client, info);
      for (const event of early) if (event.thread_id === info.id) thread.onEvent(event);
      return thread;
    } catch (error) {
      throw asSparkError(error);
    } finally {
      collect();
    }
  }

  get info(): ThreadInfo {
    return this.current;
  }

  get model(): string {
    return this.current.model;
  }

  get busy(): boolean {
    return this.running > 0;
  }

  get history(): readonly ThreadItem[] {
    return this.items;
  }

  get subAgents(): SubAgentInfo[] {
    return [...this.subs.values()];
  }

  get queuedTurns(): number {
    return this.queued;
  }

  on(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  submit(input: string): void {
    if (this.busy) {
      this.steer(input);
      return;
    }
    // Another face may have started a turn meanwhile: then this steers it, as Enter would.
    this.client.request({ type: "turn.start", thread_id: this.id, input }).catch((error: unknown) => {
      if (hostCode(error) === "response_in_progress") this.steer(input);
      else this.report(error);
    });
  }

  enqueue(input: string): void {
    this.send({ type: "turn.queue", thread_id: this.id, input });
  }

  get mode(): AgentMode {
    return this.current.mode ?? "default";
  }

  setMode(mode: AgentMode): void {
    this.current = { ...this.current, mode };
    this.send({ type: "thread.set_mode", thread_id: this.id, mode });
  }

  async startTurn(
    input: string,
    options: {
      toolChoice?: TurnToolChoice | undefined;
      mode?: AgentMode | undefined;
      outputSchema?: Record<string, unknown> | undefined;
    } = {},
  ): Promise<void> {
    const toolChoice = options.toolChoice === undefined ? {} : { tool_choice: options.toolChoice };
    if (options.mode) this.current = { ...this.current, mode: options.mode };
    await this.client
      .request({
        type: "turn.start",
        thread_id: this.id,
        input,
        ...toolChoice,
        ...(options.mode ? { mode: options.mode } : {}),
        ...(options.outputSchema ? { output_schema: options.outputSchema } : {}),
      })
      .catch((error: unknown) => {
        throw asSparkError(error);
      });
    await this.whenIdle();
  }

  steer(input: string): void {
    this.send({ type: "turn.steer", thread_id: this.id, input });
  }

  interrupt(): void {
    this.send({ type: "turn.interrupt", thread_id: this.id });
  }

  draft(text: string): Promise<void> {
    // A hint: a draft the host could not use changes nothing the person sees.
    this.client.draft(this.id, text);
    return Promise.resolve();
  }

  respondToApproval(approvalId: string, approved: boolean): boolean {
    if (!this.approvals.has(approvalId)) return false;
    this.send({ type: "approval.respond", thread_id: this.id, approval_id: approvalId, approved });
    return true;
  }

  async undo(): Promise<string[]> {
    try {
      await this.client.request({ type: "thread.undo", thread_id: this.id });
    } catch (error) {
      if (hostCode(error) === "not_found") return [];
      throw asSparkError(error);
    }
    // The host publishes `patch.undone` before it acks.
    return this.lastUndone;
  }

  async rewind(itemId: string, restore: RewindRestore): Promise<{ paths: string[]; text: string }> {
    await this.client
      .request({ type: "thread.rewind", thread_id: this.id, item_id: itemId, restore })
      .catch((error: unknown) => {
        throw asSparkError(error);
      });
    // The host publishes `thread.rewound` before it acks.
    return this.lastRewound;
  }

  async compact(focus?: string): Promise<void> {
    await this.client
      .request({ type: "thread.compact", thread_id: this.id, ...(focus ? { focus } : {}) })
      .catch((error: unknown) => {
        throw asSparkError(error);
      });
  }

  cancelSubAgent(id: string): boolean {
    if (this.subs.get(id)?.status !== "running") return false;
    this.send({ type: "subagent.cancel", thread_id: this.id, subagent_id: id });
    return true;
  }

  cancelSubAgents(): void {
    for (const sub of this.subs.values()) if (sub.status === "running") this.cancelSubAgent(sub.id);
  }

  whenIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async whenSettled(): Promise<void> {
    for (;;) {
      await this.whenIdle();
      if (!this.subAgents.some((sub) => sub.status === "running")) return;
      // A sub-agent's result starts a turn of its own; wait for it.
      await new Promise<void>((resolve) => {
        const off = this.on((event) => {
          if (event.type === "subagent.completed" || event.type === "turn.started") {
            off();
            resolve();
          }
        });
      });
    }
  }

  /** Sends the following turns to `model` (one of the host's tiers); refused while a turn runs. */
  async setModel(model: string): Promise<void> {
    if (model === this.model) return;
    await this.client
      .request({ type: "thread.set_model", thread_id: this.id, model })
      .catch((error: unknown) => {
        throw asSparkError(error);
      });
  }

  /** Stops listening (the thread goes on on the host). Idempotent. */
  close(): void {
    this.unsubscribe();
    this.listeners.clear();
  }

  private get id(): string {
    return this.current.id;
  }

  private send(request: ThreadRequest): void {
    this.client.request(request).catch((error: unknown) => this.report(error));
  }

  /** Shows a refused request where the person looks: as a notice in the thread. */
  private report(error: unknown): void {
    const text = `Error: ${error instanceof Error ? error.message : String(error)}`;
    this.emit({
      type: "item.completed",
      turn_id: "",
      item: { type: "notice", id: `notice_host_${++this.notices}`, text },
    });
  }

  private onEvent(event: StampedEvent): void {
    if (event.thread_id !== this.id) return;
    switch (event.type) {
      case "thread.started":
      case "thread.renamed":
        this.current = { ...event.thread };
        break;
      case "thread.history":
        this.items.splice(0, this.items.length, ...event.items);
        if (event.thread) this.current = { ...event.thread };
        break;
      case "patch.undone":
        this.lastUndone = event.paths;
        break;
      case "thread.rewound": {
        this.lastRewound = { paths: event.paths, text: event.text };
        const cut = this.items.findIndex((item) => item.id === event.item_id);
        if (event.restore !== "code" && cut !== -1) this.items.length = cut;
        break;
      }
      case "turn.started":
        this.running = 1;
        this.queued = Math.max(0, this.queued - 1);
        break;
      case "turn.queued":
        this.queued++;
        break;
      case "item.completed": {
        const at = this.items.findIndex((item) => item.id === event.item.id);
        if (at >= 0) this.items[at] = event.item;
        else this.items.push(event.item);
        break;
      }
      case "approval.requested":
        this.approvals.add(event.approval_id);
        break;
      case "approval.resolved":
        this.approvals.delete(event.approval_id);
        break;
      case "subagent.started":
        this.subs.set(event.subagent.id, { ...event.subagent });
        break;
      case "subagent.progress": {
        const sub = this.subs.get(event.subagent_id);
        if (sub) Object.assign(sub, { outputTokens: event.output_tokens, progress: event.progress });
        break;
      }
      case "subagent.completed": {
        const sub = this.subs.get(event.subagent_id);
        if (sub) sub.status = event.status;
        break;
      }
      default:
        break;
    }
    if (!HOST_ONLY.has(event.type)) {
      const { thread_id: _, seq: __, epoch: ___, ...plain } = event;
      this.emit(plain as ThreadEvent);
    }
    if (event.type === "turn.completed") {
      // An interrupt drops what was queued; else the host runs the queued turns one after another.
      if (event.status === "interrupted") this.queued = 0;
      if (this.queued === 0) {
        this.running = 0;
        for (const resolve of this.idleWaiters.splice(0)) resolve();
      }
    }
  }

  private emit(event: ThreadEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

/** The host's error code of a refused request, if that is what `error` is. */
function hostCode(error: unknown): SparkErrorCode | undefined {
  return error instanceof HostClientError ? error.wire?.code : undefined;
}

/** A client-core error as the CLI reports errors (a host's refusal keeps its code). */
function asSparkError(error: unknown): unknown {
  if (!(error instanceof HostClientError)) return error;
  return new SparkError(error.wire?.code ?? "server_error", error.message, { cause: error });
}
