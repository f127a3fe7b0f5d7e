import type { StampedEvent } from "../../../src/client-core/thread-view.js";
import type {
  FileDiff,
  PatchResolution,
  SandboxMode,
  SubAgentInfo,
  ThreadInfo,
  ThreadItem,
  TurnStats,
  TurnStatus,
} from "../../../src/protocol/agent.js";
import type { WireError } from "../../../src/protocol/errors.js";

type ToolItem = Extract<ThreadItem, { type: "tool_call" }>;

/** One row of the chat view. */
export type ChatEntry =
  | { kind: "user"; id: string; text: string; steer: boolean }
  | { kind: "agent"; id: string; text: string; streaming: boolean }
  | {
      kind: "tool";
      id: string;
      item: ToolItem;
      /** How each file of the item's diff was settled, by its path. */
      resolutions: Record<string, FileOutcome>;
      /** Reverted by an undo. */
      undone: boolean;
    }
  | { kind: "notice"; id: string; text: string; tone: "info" | "error" }
  | {
      kind: "approval";
      id: string;
      command: string;
      cwd: string;
      sandbox: SandboxMode;
      state: "pending" | "approved" | "denied";
    }
  | { kind: "turn"; id: string; status: TurnStatus; stats: TurnStats; error?: WireError }
  /** A sub-agent the thread delegated a task to, with its progress and, once done, its result. */
  | { kind: "subagent"; id: string; info: SubAgentInfo; result?: string; error?: string };

/** The live meter of the running turn: times are the reducer's clock (ms). */
export interface TurnMeter {
  turnId: string;
  startedAt: number;
  firstTokenAt: number | null;
  /** Text deltas of the turn so far, first and latest arrival. */
  deltas: number;
  firstDeltaAt: number | null;
  lastDeltaAt: number | null;
}

/** Everything a chat view shows of one thread. Immutable: the reducer returns new objects. */
export interface ThreadView {
  thread: ThreadInfo | null;
  entries: ChatEntry[];
  /** The running turn, null when idle. */
  turn: TurnMeter | null;
  /** The last finished turn's numbers, from the agent. */
  lastStats: TurnStats | null;
  /** Messages queued behind the running turn, in order. */
  queued: string[];
  /** Steer inputs announced but not yet seen as user messages. */
  pendingSteers: string[];
  lastSeq: number;
}

/**
 * How a file of a patch was settled: by the host (`accepted`, `rejected`), or in the editor hunk
 * by hunk, where some hunks may be kept and others not (`partly accepted`).
 */
export type FileOutcome = PatchResolution | "partly accepted";

/** What views act on: the host's events, and notes of the client's own. */
export type ViewAction =
  | StampedEvent
  | { type: "local.notice"; text: string; tone: "info" | "error" }
  /** A file reviewed hunk by hunk in the editor, settled without the host. */
  | { type: "local.patch"; itemId: string; path: string; outcome: FileOutcome }
  | { type: "local.reset" };

export function emptyView(): ThreadView {
  return {
    thread: null,
    entries: [],
    turn: null,
    lastStats: null,
    queued: [],
    pendingSteers: [],
    lastSeq: -1,
  };
}

let localIds = 0;

/**
 * Folds one action into a view. `now` is the clock for the live meter. Events at or below the
 * view's last sequence number are ignored, so replays are harmless; `thread.started` (only ever
 * the first event of a thread's stream) and a `thread.history` reset (the host could not continue
 * the client's events) start the view over.
 */
export function reduceView(view: ThreadView, action: ViewAction, now: number): ThreadView {
  if (action.type === "local.reset") return emptyView();
  if (action.type === "local.notice") {
    const entry: ChatEntry = {
      kind: "notice",
      id: `local_${++localIds}`,
      text: action.text,
      tone: action.tone,
    };
    return { ...view, entries: [...view.entries, entry] };
  }
  if (action.type === "local.patch") {
    return {
      ...view,
      entries: replaceEntry(view.entries, action.itemId, (entry) =>
        entry.kind === "tool"
          ? { ...entry, resolutions: { ...entry.resolutions, [action.path]: action.outcome } }
          : entry,
      ),
    };
  }
  if (action.type === "thread.started") {
    return { ...emptyView(), thread: action.thread, lastSeq: action.seq };
  }
  if (action.type === "thread.history" && action.reset) {
    const started = { ...emptyView(), thread: action.thread ?? view.thread, lastSeq: action.seq };
    return reduceEvent(started, action, now);
  }
  if (action.seq <= view.lastSeq) return view;
  const next = reduceEvent(view, action, now);
  return { ...next, lastSeq: action.seq };
}

function reduceEvent(view: ThreadView, event: StampedEvent, now: number): ThreadView {
  switch (event.type) {
    case "thread.started":
      return view;
    case "thread.history":
      return { ...view, entries: [...view.entries, ...event.items.flatMap(historyEntry)] };
    case "thread.renamed":
      return { ...view, thread: event.thread };
    case "turn.queued":
      return { ...view, queued: [...view.queued, event.input] };
    case "turn.started": {
      const queued = view.queued[0] === event.input ? view.queued.slice(1) : view.queued;
      const turn: TurnMeter = {
        turnId: event.turn_id,
        startedAt: now,
        firstTokenAt: null,
        deltas: 0,
        firstDeltaAt: null,
        lastDeltaAt: null,
      };
      return { ...view, queued, turn, pendingSteers: [] };
    }
    case "turn.steered":
      return { ...view, pendingSteers: [...view.pendingSteers, event.input] };
    case "item.started":
    case "item.completed":
      return upsertItem(view, event.item, event.type === "item.completed", now);
    case "item.delta": {
      const entries = replaceEntry(view.entries, event.item_id, (entry) =>
        entry.kind === "agent" ? { ...entry, text: entry.text + event.delta } : entry,
      );
      const turn = view.turn
        ? {
            ...view.turn,
            firstTokenAt: view.turn.firstTokenAt ?? now,
            deltas: view.turn.deltas + 1,
            firstDeltaAt: view.turn.firstDeltaAt ?? now,
            lastDeltaAt: now,
          }
        : null;
      return { ...view, entries, turn };
    }
    case "turn.completed": {
      const entry: ChatEntry = {
        kind: "turn",
        id: event.turn_id,
        status: event.status,
        stats: event.stats,
        ...(event.error ? { error: event.error } : {}),
      };
      // An interrupt also drops what was queued behind the turn.
      const queued = event.status === "completed" ? view.queued : [];
      const entries = view.entries.map((candidate) =>
        candidate.kind === "agent" && candidate.streaming ? { ...candidate, streaming: false } : candidate,
      );
      return {
        ...view,
        entries: [...entries, entry],
        turn: null,
        lastStats: event.stats,
        queued,
        pendingSteers: [],
      };
    }
    case "approval.requested": {
      const entry: ChatEntry = {
        kind: "approval",
        id: event.approval_id,
        command: event.command,
        cwd: event.cwd,
        sandbox: event.sandbox,
        state: "pending",
      };
      return { ...view, entries: [...view.entries, entry] };
    }
    case "approval.resolved":
      return {
        ...view,
        entries: replaceEntry(view.entries, event.approval_id, (entry) =>
          entry.kind === "approval" ? { ...entry, state: event.approved ? "approved" : "denied" } : entry,
        ),
      };
    case "patch.resolved":
      return {
        ...view,
        entries: replaceEntry(view.entries, event.item_id, (entry) =>
          entry.kind === "tool"
            ? { ...entry, resolutions: { ...entry.resolutions, [event.path]: event.resolution } }
            : entry,
        ),
      };
    case "patch.undone":
      if (event.item_id === null) return view;
      return {
        ...view,
        entries: replaceEntry(view.entries, event.item_id, (entry) =>
          entry.kind === "tool" ? { ...entry, undone: true } : entry,
        ),
      };
    case "subagent.started": {
      const entry: ChatEntry = { kind: "subagent", id: event.subagent.id, info: event.subagent };
      return { ...view, entries: [...view.entries, entry] };
    }
    case "subagent.progress":
      return {
        ...view,
        entries: replaceEntry(view.entries, event.subagent_id, (entry) =>
          entry.kind === "subagent"
            ? {
                ...entry,
                info: { ...entry.info, outputTokens: event.output_tokens, progress: event.progress },
              }
            : entry,
        ),
      };
    case "subagent.completed":
      return {
        ...view,
        entries: replaceEntry(view.entries, event.subagent_id, (entry) =>
          entry.kind === "subagent"
            ? {
                ...entry,
                info: { ...entry.info, status: event.status },
                ...(event.result === undefined ? {} : { result: event.result }),
                ...(event.error === undefined ? {} : { error: event.error }),
              }
            : entry,
        ),
      };
    default: {
      // Exhaustive for this protocol; an event of a newer host is ignored, not fatal.
      const unknown: never = event;
      void unknown;
      return view;
    }
  }
}

function upsertItem(view: ThreadView, item: ThreadItem, completed: boolean, now: number): ThreadView {
  const index = view.entries.findIndex((entry) => entry.id === item.id && entry.kind !== "turn");
  if (index !== -1) {
    const existing = view.entries[index]!;
    const updated = entryFor(item, completed, existing);
    const entries = [...view.entries];
    entries[index] = updated;
    return { ...view, entries };
  }
  let pendingSteers = view.pendingSteers;
  let steer = false;
  if (item.type === "user_message" && pendingSteers.includes(item.text)) {
    steer = true;
    const at = pendingSteers.indexOf(item.text);
    pendingSteers = [...pendingSteers.slice(0, at), ...pendingSteers.slice(at + 1)];
  }
  let entry = entryFor(item, completed, undefined);
  if (entry.kind === "user") entry = { ...entry, steer };
  // A tool call settles text already streamed: the model's first output may be the call itself.
  const turn =
    view.turn && item.type === "tool_call" && view.turn.firstTokenAt === null
      ? { ...view.turn, firstTokenAt: now }
      : view.turn;
  return { ...view, entries: [...view.entries, entry], pendingSteers, turn };
}

function entryFor(item: ThreadItem, completed: boolean, existing: ChatEntry | undefined): ChatEntry {
  switch (item.type) {
    case "user_message":
      return {
        kind: "user",
        id: item.id,
        text: item.text,
        steer: existing?.kind === "user" && existing.steer,
      };
    case "agent_message":
      // item.completed carries the whole text; item.started an empty one, filled by deltas.
      return {
        kind: "agent",
        id: item.id,
        text: completed || existing?.kind !== "agent" ? item.text : existing.text,
        streaming: !completed,
      };
    case "tool_call":
      return {
        kind: "tool",
        id: item.id,
        item,
        resolutions: existing?.kind === "tool" ? existing.resolutions : {},
        undone: existing?.kind === "tool" && existing.undone,
      };
    case "notice":
      return { kind: "notice", id: item.id, text: item.text, tone: "info" };
    default: {
      const unknown: never = item;
      const { id, type } = unknown as { id: string; type: string };
      return { kind: "notice", id, text: `(${type})`, tone: "info" };
    }
  }
}

function historyEntry(item: ThreadItem): ChatEntry[] {
  return [entryFor(item, true, undefined)];
}

function replaceEntry(
  entries: ChatEntry[],
  id: string,
  update: (entry: ChatEntry) => ChatEntry,
): ChatEntry[] {
  for (let index = entries.length - 1; index >= 0; index--) {
    const entry = entries[index]!;
    if (entry.id !== id || entry.kind === "turn") continue;
    const updated = update(entry);
    if (updated === entry) return entries;
    const copy = [...entries];
    copy[index] = updated;
    return copy;
  }
  return entries;
}

/** The diff of a completed apply_patch call, or null. */
export function diffOf(entry: ChatEntry): FileDiff[] | null {
  if (entry.kind !== "tool" || entry.item.status !== "completed") return null;
  return entry.item.display?.kind === "diff" ? entry.item.display.files : null;
}

/** Approvals still waiting for an answer. */
export function pendingApprovals(view: ThreadView): Extract<ChatEntry, { kind: "approval" }>[] {
  return view.entries.filter(
    (entry): entry is Extract<ChatEntry, { kind: "approval" }> =>
      entry.kind === "approval" && entry.state === "pending",
  );
}

/**
 * The meter line: `ttft 120 ms · 31 tok/s`. While a turn streams, a live estimate from its deltas
 * (marked `~`); after it, the agent's own numbers.
 */
export function meterText(view: ThreadView, now: number): string {
  const parts: string[] = [];
  const turn = view.turn;
  if (turn) {
    parts.push(`${((now - turn.startedAt) / 1000).toFixed(1)} s`);
    if (turn.firstTokenAt !== null) parts.push(`ttft ${Math.round(turn.firstTokenAt - turn.startedAt)} ms`);
    if (turn.deltas >= 2 && turn.lastDeltaAt! > turn.firstDeltaAt!) {
      const rate = ((turn.deltas - 1) * 1000) / (turn.lastDeltaAt! - turn.firstDeltaAt!);
      parts.push(`~${formatRate(rate)} tok/s`);
    }
    return parts.join(" · ");
  }
  const stats = view.lastStats;
  if (!stats) return "";
  if (stats.timeToFirstTokenMs !== null) parts.push(`ttft ${Math.round(stats.timeToFirstTokenMs)} ms`);
  if (stats.tokensPerSecond !== null) parts.push(`${formatRate(stats.tokensPerSecond)} tok/s`);
  return parts.join(" · ");
}

function formatRate(rate: number): string {
  return rate >= 100 ? String(Math.round(rate)) : rate.toFixed(1);
}
