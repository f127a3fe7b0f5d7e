import { patchPreviewOf } from "../../client-core/streaming-patch.js";
import {
  type Entry as CoreEntry,
  emptyView,
  type PendingApproval,
  reduceView,
  runningTools,
  type StampedEvent,
  type SubAgentView,
  startsOver,
  streamingMessage,
  type ThreadView,
  type Tone,
} from "../../client-core/thread-view.js";
import type {
  HostThreadEvent,
  McpServerInfo,
  SessionDiff,
  ThreadEvent,
  ThreadItem,
} from "../../protocol/agent.js";
import { fenceOpenAfter } from "./agent-markdown.js";
import { FramePacer } from "./frame-pacer.js";
import type { ToolCallItem } from "./tool-summary.js";

export type { PendingApproval, Tone };

/**
 * A finished piece of the conversation. Entries never change once made, so the view prints each
 * one once (Ink's `<Static>`) and a long session costs nothing to redraw.
 */
export type Entry =
  | { kind: "user"; key: string; text: string; steer: boolean }
  /**
   * Whole lines of an agent message; `first` marks the message's first chunk, `fenced` is the fence
   * line of the code block it starts inside ("```ts"), if any.
   */
  | { kind: "agent"; key: string; text: string; first: boolean; fenced: string | null }
  | { kind: "tool"; key: string; item: ToolCallItem }
  | { kind: "notice"; key: string; text: string; tone: Tone }
  /** The agent's MCP servers as `/mcp` lists them. */
  | { kind: "mcp"; key: string; servers: McpServerInfo[] }
  /** What the session changed, as `/diff` shows it. */
  | { kind: "diff"; key: string; diff: SessionDiff };

export type Phase =
  | "idle"
  | "thinking"
  | "streaming"
  /** The model is writing an `apply_patch` call (shown as it grows). */
  | "writing patch"
  | "running tool"
  | "waiting for approval"
  | "interrupting";

export interface ConversationView {
  entries: readonly Entry[];
  /**
   * The unfinished tail (a partial line, maybe after blank lines) of the message being streamed;
   * `continued` when earlier lines of the message are already entries.
   */
  streaming: { text: string; continued: boolean; fenced: string | null } | null;
  running: readonly ToolCallItem[];
  approvals: readonly PendingApproval[];
  /** Messages queued with Tab, until their turn starts. */
  queued: readonly string[];
  phase: Phase;
  /** Background sub-agents still running, oldest first. */
  subAgents: readonly SubAgentView[];
  /** The client core's view of the thread, everything above is derived from (turn timing included). */
  thread: ThreadView;
}

export interface ConversationStoreOptions {
  /** Least time between two published snapshots, so a fast stream costs one redraw per frame. Default: 16 ms. */
  frameMs?: number;
  /** The share of the main thread drawing may take (see {@link FramePacer}). Default: 0.05. */
  frameShare?: number;
  /** Clock in ms. Default: `performance.now`. */
  now?: () => number;
}

/** The epoch of events stamped here, for a thread that runs in this process. */
const LOCAL_EPOCH = "local";

/** How far an agent message being streamed has been printed. */
interface Printing {
  /** Characters of the message's text already printed, or dropped as leading blank lines. */
  consumed: number;
  started: boolean;
  /** The fence line of the code block the printed part has left open, if any. */
  fenced: string | null;
}

/**
 * The terminal UI's view model: a thin adapter over the client core's thread view
 * ({@link reduceView}). Thread events (stamped by the host, or here with a local `seq` for a thread
 * running in this process) fold into the core view; what the terminal prints once (`<Static>`)
 * and its phase are derived from it. Finished lines of a streaming message become entries as soon
 * as their newline arrives, so only the last partial line is redrawn while the model types.
 * Changes are published at most once per frame (listeners get one call per batch of events),
 * frames paced by what the last one took to draw ({@link FramePacer}); the end of a turn and
 * {@link flush} publish at once.
 */
export class ConversationStore {
  private readonly pacer: FramePacer;
  private readonly now: () => number;
  private readonly listeners = new Set<() => void>();
  private view: ThreadView = emptyView();
  /** Entries printed so far: they stay on screen whatever the core view does later. */
  private entries: Entry[] = [];
  /** Ids of the core view's entries that are printed in full. */
  private printed = new Set<string>();
  /** Core entries before this index are all printed. */
  private printedUpTo = 0;
  private printing = new Map<string, Printing>();
  private streaming: ConversationView["streaming"] = null;
  /** Esc was pressed during the running turn. */
  private interrupting = false;
  private keys = 0;
  private snapshot: ConversationView;
  private flushTimer: NodeJS.Timeout | NodeJS.Immediate | null = null;

  constructor(options: ConversationStoreOptions = {}) {
    this.now = options.now ?? (() => performance.now());
    this.pacer = new FramePacer({
      frameMs: options.frameMs ?? 16,
      share: options.frameShare ?? 0.05,
      now: this.now,
    });
    this.snapshot = this.build();
  }

  /** For `useSyncExternalStore`. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** The latest published view; the same object until something changes. */
  readonly getSnapshot = (): ConversationView => this.snapshot;

  /** Live (not the published snapshot): whether a turn is running or an approval waits. */
  get busy(): boolean {
    return this.phase() !== "idle";
  }

  /** Live: the conversation's entries (what `/rewind` offers turns from). */
  get coreEntries(): readonly CoreEntry[] {
    return this.view.entries;
  }

  /** Live: the oldest approval still waiting for an answer. */
  get pendingApproval(): PendingApproval | null {
    return this.view.approvals[0] ?? null;
  }

  /** Folds one event: stamped by the host, or (a thread in this process) stamped here. */
  apply(event: ThreadEvent | HostThreadEvent | StampedEvent): void {
    const stamped: StampedEvent =
      "seq" in event
        ? event
        : ({
            ...event,
            thread_id: this.view.id,
            seq: this.view.lastSeq + 1,
            epoch: this.view.epoch ?? LOCAL_EPOCH,
          } as StampedEvent);
    // The view's entries begin anew; what is printed stays on screen.
    if (startsOver(this.view, stamped) || stamped.type === "thread.history") {
      this.printed.clear();
      this.printedUpTo = 0;
      this.printing.clear();
    }
    const running = this.view.turn !== null;
    this.view = reduceView(this.view, stamped, this.now());
    // A rewound conversation is shorter: what follows it (its notice first) is printed from there.
    if (stamped.type === "thread.rewound")
      this.printedUpTo = Math.min(this.printedUpTo, this.view.entries.length - 1);
    if (!this.view.turn) this.interrupting = false;
    this.changed();
    // The end of a turn is drawn at once: the answer's last words are not held by the pacing.
    if (running && !this.view.turn) this.flush();
  }

  /**
   * Shows a thread's items so far (a resumed session, or a turn started before the view) as finished
   * entries; `running` when the thread is already in a turn.
   */
  load(items: readonly ThreadItem[], running = false): void {
    this.apply({ type: "thread.history", items: [...items] });
    // The turn started before this view: its id and input are not known, only that it runs.
    if (running) this.apply({ type: "turn.started", turn_id: "", input: "" });
  }

  notice(text: string, tone: Tone = "info"): void {
    this.view = reduceView(this.view, { type: "local.notice", text, tone }, this.now());
    this.changed();
  }

  /** Prints the MCP servers (`/mcp`) after everything finished so far. */
  showMcpServers(servers: readonly McpServerInfo[]): void {
    this.print();
    this.push({ kind: "mcp", servers: [...servers] });
    this.changed();
  }

  /** Prints what the session changed (`/diff`) after everything finished so far. */
  showDiff(diff: SessionDiff): void {
    this.print();
    this.push({ kind: "diff", diff });
    this.changed();
  }

  /** Esc was pressed: shown at once, before the turn reports that it has stopped. */
  markInterrupting(): void {
    if (!this.view.turn) return;
    this.interrupting = true;
    this.changed();
  }

  /** Publishes pending changes now. */
  flush(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer as NodeJS.Timeout);
      clearImmediate(this.flushTimer as NodeJS.Immediate);
      this.flushTimer = null;
    }
    const drawn = this.pacer.start();
    this.snapshot = this.build();
    for (const listener of this.listeners) listener();
    // The view draws in the microtask its listener queued (React's render, Ink's frame): after it.
    queueMicrotask(drawn);
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

  private phase(): Phase {
    const view = this.view;
    if (view.turn && this.interrupting) return "interrupting";
    // A sub-agent may ask while no turn of this thread runs.
    if (view.approvals.length > 0) return "waiting for approval";
    if (!view.turn) return "idle";
    const running = runningTools(view);
    if (running.some((item) => patchPreviewOf(item)?.complete === false)) return "writing patch";
    if (running.length > 0) return "running tool";
    return streamingMessage(view) ? "streaming" : "thinking";
  }

  /** Prints what the core view has finished since the last call; keeps the streamed tail live. */
  private print(): void {
    const entries = this.view.entries;
    let tail: ConversationView["streaming"] = null;
    let tailOf: Extract<CoreEntry, { kind: "agent" }> | null = null;
    let allPrinted = true;
    for (let at = this.printedUpTo; at < entries.length; at++) {
      const entry = entries[at]!;
      if (!this.printed.has(entry.id)) {
        if (entry.kind === "agent" && entry.streaming) {
          tail = this.streamLines(entry);
          tailOf = entry;
        } else if (!(entry.kind === "tool" && entry.item.status === "running")) {
          // Something after a message still streaming (a steer) is printed below its partial line.
          if (tail && tailOf) this.printTail(tailOf, tail);
          tail = null;
          tailOf = null;
          this.printEntry(entry);
        }
      }
      if (allPrinted && this.printed.has(entry.id)) this.printedUpTo = at + 1;
      else allPrinted = false;
    }
    this.streaming = tail;
  }

  private printEntry(entry: CoreEntry): void {
    this.printed.add(entry.id);
    switch (entry.kind) {
      case "user":
        this.push({ kind: "user", text: entry.text, steer: entry.steer });
        return;
      case "tool":
        this.push({ kind: "tool", item: entry.item });
        return;
      case "notice":
        this.push({ kind: "notice", text: entry.text, tone: entry.tone });
        return;
      case "agent": {
        const printing = this.printing.get(entry.id);
        this.printing.delete(entry.id);
        if (!printing) {
          // Never streamed here (a resumed session's history): the whole message at once.
          const text = entry.text.trim();
          if (text) this.push({ kind: "agent", text, first: true, fenced: null });
          return;
        }
        const rest = entry.text.slice(printing.consumed);
        const text = (printing.started ? rest : rest.replace(/^\s*\n/, "")).trimEnd();
        if (text.trim() !== "")
          this.push({ kind: "agent", text, first: !printing.started, fenced: printing.fenced });
        return;
      }
      default: {
        const unknown: never = entry;
        void unknown;
      }
    }
  }

  /** Prints the whole lines of a message being streamed; returns its unfinished tail. */
  private streamLines(entry: Extract<CoreEntry, { kind: "agent" }>): ConversationView["streaming"] {
    let printing = this.printing.get(entry.id);
    if (!printing) {
      printing = { consumed: 0, started: false, fenced: null };
      this.printing.set(entry.id, printing);
    }
    let text = entry.text.slice(printing.consumed);
    // Leading blank lines of a message are never shown.
    if (!printing.started) {
      const blank = /^\s*\n/.exec(text)?.[0].length ?? 0;
      printing.consumed += blank;
      text = text.slice(blank);
    }
    const lastNewline = text.lastIndexOf("\n");
    // Whole lines are final; trailing blank lines wait until text follows them.
    const body = lastNewline === -1 ? "" : text.slice(0, lastNewline).replace(/\n+$/, "");
    if (body.trim() !== "") {
      this.push({ kind: "agent", text: body, first: !printing.started, fenced: printing.fenced });
      printing.fenced = fenceOpenAfter(body, printing.fenced);
      printing.started = true;
      // The newline that ended the printed chunk is not a blank line of what follows.
      printing.consumed += body.length + 1;
      text = text.slice(body.length + 1);
    }
    return { text, continued: printing.started, fenced: printing.fenced };
  }

  /** Prints the partial line `tail` of a message still streaming; what it streams next follows. */
  private printTail(
    entry: Extract<CoreEntry, { kind: "agent" }>,
    tail: NonNullable<ConversationView["streaming"]>,
  ): void {
    const printing = this.printing.get(entry.id);
    if (!printing) return;
    const text = tail.text.trimEnd();
    if (text.trim() === "") return;
    this.push({ kind: "agent", text, first: !printing.started, fenced: printing.fenced });
    printing.fenced = fenceOpenAfter(text, printing.fenced);
    printing.started = true;
    printing.consumed += tail.text.length;
  }

  private push(entry: DistributiveOmit<Entry, "key">): void {
    this.entries.push({ ...entry, key: `e${++this.keys}` } as Entry);
  }

  private changed(): void {
    // Printing follows every change, so a streamed line is committed once, whatever the frame rate.
    this.print();
    if (this.flushTimer) return;
    const wait = this.pacer.wait();
    this.flushTimer = wait > 0 ? setTimeout(() => this.flush(), wait) : setImmediate(() => this.flush());
  }

  private build(): ConversationView {
    const view = this.view;
    return {
      // A new array each time, so the view's <Static> sees that entries were added.
      entries: this.entries.slice(),
      streaming: this.streaming,
      running: runningTools(view),
      approvals: view.approvals,
      queued: view.queued,
      phase: this.phase(),
      subAgents: view.subAgents.filter((sub) => sub.status === "running"),
      thread: view,
    };
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
