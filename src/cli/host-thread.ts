import type { HostEvent, SubAgentInfo, ThreadEvent, ThreadInfo, ThreadItem } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import type { HostLink } from "./host-link.js";
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
  /** Resolved and replaced whenever the thread becomes idle. */
  private idleWaiters: (() => void)[] = [];
  private readonly unsubscribe: () => void;
  private notices = 0;

  private constructor(
    private readonly link: HostLink,
    private current: ThreadInfo,
  ) {
    this.unsubscribe = link.onEvent((event) => this.onEvent(event));
  }

  /**
   * Starts a new thread on the host (`threadId` absent) or subscribes to one (a live thread or a
   * saved session). Resolves once its `thread.started` and history have arrived.
   */
  static async open(link: HostLink, threadId?: string): Promise<HostThread> {
    let thread: HostThread | null = null;
    const early: HostEvent[] = [];
    // Events before the ack belong to the thread being opened: they are collected, then replayed.
    const collect = link.onEvent((event) => {
      if (!thread) early.push(event);
    });
    try {
      const ack = await link.request(
        threadId ? { type: "thread.resume", thread_id: threadId } : { type: "thread.start" },
      );
      const id = ack.thread_id ?? threadId!;
      const mine = early.filter((event) => "thread_id" in event && event.thread_id === id);
      const started = mine.find(
        (event) => event.type === "thread.started" || event.type === "thread.history",
      );
      const info =
        started?.type === "thread.started"
          ? started.thread
          : started?.type === "thread.history" && started.thread
            ? started.thread
            : null;
      if (!info) throw new SparkError("server_error", `The agent host sent no thread.started for ${id}.`);
      thread = new HostThread(link, info);
      for (const event of mine) thread.onEvent(event);
      return thread;
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
    this.link.request({ type: "turn.start", thread_id: this.id, input }).catch((error: unknown) => {
      if (error instanceof SparkError && error.code === "response_in_progress") this.steer(input);
      else this.report(error);
    });
  }

  enqueue(input: string): void {
    this.send({ type: "turn.queue", thread_id: this.id, input });
  }

  async startTurn(input: string): Promise<void> {
    await this.link.request({ type: "turn.start", thread_id: this.id, input });
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
    return this.link.request({ type: "turn.draft", thread_id: this.id, input: text }).then(
      () => {},
      () => {},
    );
  }

  respondToApproval(approvalId: string, approved: boolean): boolean {
    if (!this.approvals.has(approvalId)) return false;
    this.send({ type: "approval.respond", thread_id: this.id, approval_id: approvalId, approved });
    return true;
  }

  async undo(): Promise<string[]> {
    try {
      await this.link.request({ type: "thread.undo", thread_id: this.id });
    } catch (error) {
      if (error instanceof SparkError && error.code === "not_found") return [];
      throw error;
    }
    // The host publishes `patch.undone` before it acks.
    return this.lastUndone;
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

  setModel(model: string): void {
    if (model === this.model) return;
    throw new SparkError("invalid_request", "Switching models is not available on an agent host.");
  }

  /** Stops listening (the thread goes on on the host). Idempotent. */
  close(): void {
    this.unsubscribe();
    this.listeners.clear();
  }

  private get id(): string {
    return this.current.id;
  }

  private send(call: Parameters<HostLink["request"]>[0]): void {
    this.link.request(call).catch((error: unknown) => this.report(error));
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

  private onEvent(event: HostEvent): void {
    if (!("thread_id" in event) || event.thread_id !== this.id || !("seq" in event)) {
      if (event.type === "thread.deleted" && event.thread_id === this.id)
        this.report("The thread was deleted.");
      return;
    }
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
