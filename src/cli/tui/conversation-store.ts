import type {
  ApprovalRequestEvent,
  SubAgentInfo,
  ThreadEvent,
  ThreadItem,
  TurnStats,
  TurnStatus,
} from "../../protocol/agent.js";
import { fenceOpenAfter } from "./agent-markdown.js";
import type { ToolCallItem } from "./tool-summary.js";

export type Tone = "dim" | "info" | "warn" | "error";

/**
 * A finished piece of the conversation. Entries never change once made, so the view prints each
 * one once (Ink's `<Static>`) and a long session costs nothing to redraw.
 */
export type Entry =
  | { kind: "user"; key: string; text: string; steer: boolean }
  /**
   * Whole lines of an agent message; `first` marks the message's first chunk, `fenced` that it
   * starts inside a code block.
   */
  | { kind: "agent"; key: string; text: string; first: boolean; fenced: boolean }
  | { kind: "tool"; key: string; item: ToolCallItem }
  | { kind: "notice"; key: string; text: string; tone: Tone };

export type Phase =
  | "idle"
  | "thinking"
  | "streaming"
  | "running tool"
  | "waiting for approval"
  | "interrupting";

/** Timing of the current (or last) turn, for the status line. */
export interface TurnMeter {
  startedAt: number;
  firstTokenAt: number | null;
  /** The agent message being streamed: its first and latest delta, and how many arrived. */
  message: { firstAt: number; lastAt: number; deltas: number } | null;
  endedAt: number | null;
  status: TurnStatus | null;
  /** The agent's own measurements, once the turn has completed. */
  stats: TurnStats | null;
}

export type PendingApproval = ApprovalRequestEvent & { turn_id: string };

export interface ConversationView {
  entries: readonly Entry[];
  /**
   * The unfinished tail (a partial line, maybe after blank lines) of the message being streamed;
   * `continued` when earlier lines of the message are already entries.
   */
  streaming: { text: string; continued: boolean; fenced: boolean } | null;
  running: readonly ToolCallItem[];
  approvals: readonly PendingApproval[];
  /** Messages queued with Tab, until their turn starts. */
  queued: readonly string[];
  phase: Phase;
  turn: TurnMeter | null;
  /** Background sub-agents still running, oldest first. */
  subAgents: readonly SubAgentInfo[];
}

export interface ConversationStoreOptions {
  /** Least time between two published snapshots, so a fast stream costs one redraw per frame. Default: 16 ms. */
  frameMs?: number;
  /** Clock in ms. Default: `performance.now`. */
  now?: () => number;
}

/**
 * The terminal UI's view model: folds thread events into entries and live state. Finished lines of a
 * streaming message become entries as soon as their newline arrives, so only the last partial line
 * is redrawn while the model types. Changes are published at most once per frame (listeners get
 * one call per batch of events); {@link flush} publishes at once.
 */
export class ConversationStore {
  private readonly frameMs: number;
  private readonly now: () => number;
  private readonly listeners = new Set<() => void>();
  private entries: Entry[] = [];
  private streaming: string | null = null;
  private messageStarted = false;
  /** Whether the streamed message so far has left a code block open. */
  private fenced = false;
  private running: ToolCallItem[] = [];
  private approvals: PendingApproval[] = [];
  private queued: string[] = [];
  private subAgents: SubAgentInfo[] = [];
  private phase: Phase = "idle";
  private turn: TurnMeter | null = null;
  private nextUserIsSteer = false;
  private keys = 0;
  private snapshot: ConversationView;
  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | null = null;
  private lastFlush = Number.NEGATIVE_INFINITY;

  constructor(options: ConversationStoreOptions = {}) {
    this.frameMs = options.frameMs ?? 16;
    this.now = options.now ?? (() => performance.now());
    this.snapshot = this.build();
  }

  /** For `useSyncExternalStore`. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** The latest published view; the same object until something changes. */
  readonly getSnapshot = (): ConversationView => this.snapshot;

  /** Live (not the published snapshot): whether a turn is running. */
  get busy(): boolean {
    return this.phase !== "idle";
  }

  /** Live: the oldest approval still waiting for an answer. */
  get pendingApproval(): PendingApproval | null {
    return this.approvals[0] ?? null;
  }

  apply(event: ThreadEvent): void {
    const now = this.now();
    switch (event.type) {
      case "thread.started":
        break;
      case "item.started":
        this.itemStarted(event.item);
        break;
      case "turn.started": {
        this.phase = "thinking";
        this.turn = {
          startedAt: now,
          firstTokenAt: null,
          message: null,
          endedAt: null,
          status: null,
          stats: null,
        };
        const queuedAt = this.queued.indexOf(event.input);
        if (queuedAt !== -1) this.queued.splice(queuedAt, 1);
        break;
      }
      case "turn.queued":
        this.queued.push(event.input);
        break;
      case "turn.steered":
        this.nextUserIsSteer = true;
        break;
      case "item.delta":
        this.delta(event.delta, now);
        break;
      case "item.completed":
        this.itemCompleted(event.item);
        break;
      case "approval.requested": {
        const { type: _, ...approval } = event;
        this.approvals.push(approval);
        this.phase = "waiting for approval";
        break;
      }
      case "approval.resolved": {
        const approval = this.approvals.find((a) => a.approval_id === event.approval_id);
        this.approvals = this.approvals.filter((a) => a.approval_id !== event.approval_id);
        if (approval) {
          this.push({
            kind: "notice",
            text: `${event.approved ? "Approved" : "Denied"}: $ ${approval.command}`,
            tone: event.approved ? "dim" : "warn",
          });
        }
        // A sub-agent may ask while no turn of this thread runs: then the thread is idle again.
        if (this.phase === "waiting for approval" && this.approvals.length === 0)
          this.phase = this.turn && this.turn.endedAt === null ? "running tool" : "idle";
        break;
      }
      case "turn.completed":
        this.endMessage();
        this.running = [];
        this.approvals = [];
        this.phase = "idle";
        if (this.turn) {
          this.turn.endedAt = now;
          this.turn.status = event.status;
          this.turn.stats = event.stats;
        }
        if (event.status === "interrupted") {
          const dropped = this.queued.length;
          this.queued = [];
          const note = dropped > 0 ? ` ${dropped} queued message${dropped > 1 ? "s" : ""} dropped.` : "";
          this.push({ kind: "notice", text: `Interrupted.${note}`, tone: "warn" });
        } else if (event.status === "failed") {
          this.push({
            kind: "notice",
            text: `Error: ${event.error?.message ?? "the turn failed."}`,
            tone: "error",
          });
        }
        break;
      case "subagent.started":
        this.subAgents.push({ ...event.subagent });
        this.push({
          kind: "notice",
          text: `Sub-agent ${event.subagent.id} started: ${event.subagent.task}`,
          tone: "dim",
        });
        break;
      case "subagent.progress": {
        const sub = this.subAgents.find((s) => s.id === event.subagent_id);
        if (sub) {
          sub.outputTokens = event.output_tokens;
          sub.progress = event.progress;
        }
        break;
      }
      case "subagent.completed": {
        this.subAgents = this.subAgents.filter((s) => s.id !== event.subagent_id);
        const how = event.status === "completed" ? "finished" : event.status;
        this.push({
          kind: "notice",
          text: `Sub-agent ${event.subagent_id} ${how}${event.error ? `: ${event.error}` : ""}`,
          tone: event.status === "failed" ? "error" : event.status === "cancelled" ? "warn" : "dim",
        });
        break;
      }
      default: {
        const unknown: never = event;
        void unknown;
      }
    }
    this.changed();
  }

  /**
   * Shows a thread's items so far (a resumed session, or a turn started before the view) as finished
   * entries; `running` when the thread is already in a turn.
   */
  load(items: readonly ThreadItem[], running = false): void {
    for (const item of items) {
      if (item.type === "agent_message") {
        if (item.text.trim())
          this.push({ kind: "agent", text: item.text.trim(), first: true, fenced: false });
      } else this.itemCompleted(item);
    }
    if (running) {
      this.phase = "thinking";
      this.turn = {
        startedAt: this.now(),
        firstTokenAt: null,
        message: null,
        endedAt: null,
        status: null,
        stats: null,
      };
    }
    this.changed();
  }

  notice(text: string, tone: Tone = "info"): void {
    this.push({ kind: "notice", text, tone });
    this.changed();
  }

  /** Esc was pressed: shown at once, before the turn reports that it has stopped. */
  markInterrupting(): void {
    if (this.phase === "idle") return;
    this.phase = "interrupting";
    this.changed();
  }

  /** Publishes pending changes now. */
  flush(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer as NodeJS.Timeout);
      clearImmediate(this.flushTimer as NodeJS.Immediate);
      this.flushTimer = null;
    }
    this.lastFlush = this.now();
    this.snapshot = this.build();
    for (const listener of this.listeners) listener();
  }

  /** Stops publishing (the view is gone). */
  dispose(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer as NodeJS.Timeout);
      clearImmediate(this.flushTimer as NodeJS.Immediate);
      this.flushTimer = null;
    }
    this.listeners.clear();
  }

  private itemStarted(item: ThreadItem): void {
    if (item.type === "agent_message") {
      this.endMessage();
      this.streaming = "";
      this.messageStarted = false;
      this.fenced = false;
      this.phase = "streaming";
    } else if (item.type === "tool_call") {
      this.running.push(item);
      this.phase = "running tool";
    }
  }

  private itemCompleted(item: ThreadItem): void {
    switch (item.type) {
      case "user_message":
        this.push({ kind: "user", text: item.text, steer: this.nextUserIsSteer });
        this.nextUserIsSteer = false;
        break;
      case "agent_message":
        this.endMessage();
        if (this.phase === "streaming") this.phase = "thinking";
        break;
      case "tool_call":
        this.running = this.running.filter((running) => running.id !== item.id);
        this.push({ kind: "tool", item });
        if (this.phase === "running tool" && this.running.length === 0) this.phase = "thinking";
        break;
      case "notice":
        this.push({ kind: "notice", text: item.text, tone: "dim" });
        break;
      default: {
        const unknown: never = item;
        void unknown;
      }
    }
  }

  private delta(delta: string, now: number): void {
    if (this.streaming === null) {
      this.streaming = "";
      this.messageStarted = false;
      this.fenced = false;
    }
    if (this.phase === "thinking") this.phase = "streaming";
    if (this.turn) {
      this.turn.firstTokenAt ??= now;
      if (this.turn.message) {
        this.turn.message.lastAt = now;
        this.turn.message.deltas++;
      } else this.turn.message = { firstAt: now, lastAt: now, deltas: 1 };
    }
    let text = this.streaming + delta;
    // Leading blank lines of a message are never shown.
    if (!this.messageStarted) text = text.replace(/^\s*\n/, "");
    const lastNewline = text.lastIndexOf("\n");
    if (lastNewline === -1) {
      this.streaming = text;
      return;
    }
    // Whole lines are final; trailing blank lines wait until text follows them.
    const complete = text.slice(0, lastNewline);
    const body = complete.replace(/\n+$/, "");
    if (body.trim() === "") {
      this.streaming = text;
      return;
    }
    this.push({ kind: "agent", text: body, first: !this.messageStarted, fenced: this.fenced });
    this.fenced = fenceOpenAfter(body, this.fenced);
    this.messageStarted = true;
    this.streaming = complete.slice(body.length) + text.slice(lastNewline);
    // What remains starts with the newline that ended the committed chunk; it is not a blank line.
    this.streaming = this.streaming.slice(1);
  }

  private endMessage(): void {
    if (this.streaming === null) return;
    const rest = (this.messageStarted ? this.streaming : this.streaming.replace(/^\s*\n/, "")).trimEnd();
    if (rest.trim() !== "")
      this.push({ kind: "agent", text: rest, first: !this.messageStarted, fenced: this.fenced });
    this.streaming = null;
    this.messageStarted = false;
    this.fenced = false;
    if (this.turn) this.turn.message = null;
  }

  private push(entry: DistributiveOmit<Entry, "key">): void {
    this.entries.push({ ...entry, key: `e${++this.keys}` } as Entry);
  }

  private changed(): void {
    if (this.flushTimer) return;
    const wait = this.lastFlush + this.frameMs - this.now();
    this.flushTimer = wait > 0 ? setTimeout(() => this.flush(), wait) : setImmediate(() => this.flush());
  }

  private build(): ConversationView {
    return {
      // A new array each time, so the view's <Static> sees that entries were added.
      entries: this.entries.slice(),
      streaming:
        this.streaming === null
          ? null
          : { text: this.streaming, continued: this.messageStarted, fenced: this.fenced },
      running: this.running.slice(),
      approvals: this.approvals.slice(),
      queued: this.queued.slice(),
      subAgents: this.subAgents.map((sub) => ({ ...sub })),
      phase: this.phase,
      turn: this.turn ? { ...this.turn, message: this.turn.message ? { ...this.turn.message } : null } : null,
    };
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
