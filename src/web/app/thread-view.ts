import type {
  ApprovalRequestEvent,
  HostEvent,
  PatchResolution,
  SubAgentInfo,
  ThreadInfo,
  ThreadItem,
  ToolDisplay,
  TurnStats,
  TurnStatus,
} from "../../protocol/agent.js";

/** One thing shown in the conversation, keyed by the id of the item it renders. */
export type Entry =
  | { kind: "user"; id: string; text: string; steer: boolean }
  | { kind: "agent"; id: string; text: string; streaming: boolean }
  | {
      kind: "tool";
      id: string;
      name: string;
      arguments: string;
      status: "running" | "completed" | "failed";
      output?: string;
      display?: ToolDisplay;
    }
  | { kind: "notice"; id: string; text: string; tone: "info" | "warn" | "error" };

/** The turn being generated, measured on arrival for the live meter. */
export interface LiveTurn {
  id: string;
  startedAt: number;
  firstTokenAt: number | null;
  lastTokenAt: number | null;
  /** Deltas after the first one; each is one token while the socket keeps up. */
  deltas: number;
}

export interface TurnRecord {
  id: string;
  status: TurnStatus;
  stats: TurnStats;
}

/** How a file of a patch was settled; `undone` when the whole patch was undone. */
export type FileState = PatchResolution | "undone";

/** Everything the app shows of one thread, rebuilt only from the thread's events. */
export interface ThreadView {
  id: string;
  info: ThreadInfo | null;
  /** The last event applied; a replayed one at or below it is ignored. */
  lastSeq: number;
  /** The host epoch `lastSeq` belongs to (null before the first event). */
  epoch: string | null;
  entries: Entry[];
  turn: LiveTurn | null;
  turns: TurnRecord[];
  queued: string[];
  approvals: ApprovalRequestEvent[];
  /** Per tool call (patch) id, per file path. */
  files: Record<string, Record<string, FileState>>;
  steerNext: boolean;
  /** Background sub-agents this thread delegated to, in the order they started. */
  subAgents: SubAgentInfo[];
}

export function emptyView(id: string): ThreadView {
  return {
    id,
    info: null,
    lastSeq: -1,
    epoch: null,
    entries: [],
    turn: null,
    turns: [],
    queued: [],
    approvals: [],
    files: {},
    steerNext: false,
    subAgents: [],
  };
}

export type StampedEvent = Extract<HostEvent, { seq: number }>;

/**
 * Applies one stamped event; returns the same view when the event was seen already (`seq` at or
 * below the last one), so a reconnect that replays events can neither lose nor repeat text.
 * Items are placed by id: a second `item.started` for an id does not add another entry. An event of
 * another epoch (the server restarted) or a `thread.history` reset starts the view over: what it
 * held cannot be continued.
 */
export function applyEvent(view: ThreadView, event: StampedEvent, now: number): ThreadView {
  const reset = event.type === "thread.history" && event.reset === true;
  if (reset || (view.epoch !== null && event.epoch !== view.epoch)) {
    view = { ...emptyView(view.id), info: view.info };
  } else if (event.seq <= view.lastSeq) return view;
  const next: ThreadView = { ...view, lastSeq: event.seq, epoch: event.epoch };
  switch (event.type) {
    case "thread.started":
    case "thread.renamed":
      next.info = event.thread;
      break;
    case "thread.history":
      next.entries = event.items.map((item) => entryOf(item, false));
      if (event.thread) next.info = event.thread;
      break;
    case "turn.started":
      next.turn = { id: event.turn_id, startedAt: now, firstTokenAt: null, lastTokenAt: null, deltas: 0 };
      next.queued = removeFirst(view.queued, event.input);
      break;
    case "turn.queued":
      next.queued = [...view.queued, event.input];
      break;
    case "turn.steered":
      next.steerNext = true;
      break;
    case "item.started":
    case "item.completed": {
      const steer = event.item.type === "user_message" && view.steerNext && !has(view, event.item.id);
      if (steer) next.steerNext = false;
      next.entries = upsert(view.entries, entryOf(event.item, event.type === "item.started", steer));
      break;
    }
    case "item.delta": {
      const at = view.entries.findIndex((entry) => entry.id === event.item_id);
      const entry = view.entries[at];
      if (entry?.kind !== "agent") break;
      next.entries = [...view.entries];
      next.entries[at] = { ...entry, text: entry.text + event.delta };
      if (view.turn) {
        next.turn = {
          ...view.turn,
          firstTokenAt: view.turn.firstTokenAt ?? now,
          lastTokenAt: now,
          deltas: view.turn.firstTokenAt === null ? 0 : view.turn.deltas + 1,
        };
      }
      break;
    }
    case "turn.completed": {
      next.turn = null;
      next.turns = [...view.turns, { id: event.turn_id, status: event.status, stats: event.stats }];
      next.approvals = [];
      next.steerNext = false;
      next.entries = view.entries.map((entry) =>
        entry.kind === "agent" && entry.streaming ? { ...entry, streaming: false } : entry,
      );
      if (event.status === "interrupted") {
        const dropped = view.queued.length;
        next.queued = [];
        const note = dropped > 0 ? ` ${dropped} queued message${dropped > 1 ? "s" : ""} dropped.` : "";
        next.entries.push(notice(event.seq, `Interrupted.${note}`, "warn"));
      } else if (event.status === "failed") {
        next.entries.push(notice(event.seq, `Error: ${event.error?.message ?? "the turn failed."}`, "error"));
      }
      break;
    }
    case "approval.requested": {
      const { type: _, turn_id: __, thread_id: ___, seq: ____, ...approval } = event;
      next.approvals = [...view.approvals, approval];
      break;
    }
    case "approval.resolved": {
      const approval = view.approvals.find((a) => a.approval_id === event.approval_id);
      next.approvals = view.approvals.filter((a) => a.approval_id !== event.approval_id);
      if (approval) {
        const text = `${event.approved ? "Approved" : "Denied"}: $ ${approval.command}`;
        next.entries = [...view.entries, notice(event.seq, text, event.approved ? "info" : "warn")];
      }
      break;
    }
    case "patch.resolved":
      next.files = setFiles(view.files, event.item_id, [event.path], event.resolution);
      break;
    case "patch.undone": {
      const paths = event.paths;
      next.entries = [...view.entries, notice(event.seq, `Undone: ${paths.join(", ")}`, "info")];
      if (event.item_id)
        next.files = setFiles(view.files, event.item_id, undonePaths(view, event.item_id, paths), "undone");
      break;
    }
    // Their results arrive as turns of the thread; here they are listed with their progress.
    case "subagent.started":
      next.subAgents = [...view.subAgents.filter((s) => s.id !== event.subagent.id), event.subagent];
      break;
    case "subagent.progress":
      next.subAgents = view.subAgents.map((s) =>
        s.id === event.subagent_id
          ? { ...s, outputTokens: event.output_tokens, progress: event.progress }
          : s,
      );
      break;
    case "subagent.completed":
      next.subAgents = view.subAgents.map((s) =>
        s.id === event.subagent_id ? { ...s, status: event.status, progress: event.error ?? s.progress } : s,
      );
      break;
    default: {
      const unknown: never = event;
      void unknown;
    }
  }
  return next;
}

/** Client-side measurements of the running turn: time to first token and tokens per second. */
export function liveMeter(turn: LiveTurn): { ttftMs: number | null; tokensPerSecond: number | null } {
  const ttftMs = turn.firstTokenAt === null ? null : turn.firstTokenAt - turn.startedAt;
  const span =
    turn.lastTokenAt !== null && turn.firstTokenAt !== null ? turn.lastTokenAt - turn.firstTokenAt : 0;
  return { ttftMs, tokensPerSecond: span > 200 && turn.deltas > 0 ? (turn.deltas * 1000) / span : null };
}

function entryOf(item: ThreadItem, started: boolean, steer = false): Entry {
  switch (item.type) {
    case "user_message":
      return { kind: "user", id: item.id, text: item.text, steer };
    case "agent_message":
      return { kind: "agent", id: item.id, text: item.text, streaming: started };
    case "tool_call": {
      const { type: _, ...rest } = item;
      return { kind: "tool", ...rest };
    }
    case "notice":
      return { kind: "notice", id: item.id, text: item.text, tone: "info" };
    default: {
      const unknown: never = item;
      throw new Error(`Unknown item ${JSON.stringify(unknown)}`);
    }
  }
}

function has(view: ThreadView, id: string): boolean {
  return view.entries.some((entry) => entry.id === id);
}

/** Replaces the entry with the same id (keeping a user message's steer mark), or appends. */
function upsert(entries: Entry[], entry: Entry): Entry[] {
  const at = entries.findIndex((candidate) => candidate.id === entry.id);
  if (at === -1) return [...entries, entry];
  const old = entries[at]!;
  const merged =
    entry.kind === "user" && old.kind === "user" ? { ...entry, steer: old.steer || entry.steer } : entry;
  const next = [...entries];
  next[at] = merged;
  return next;
}

function notice(seq: number, text: string, tone: "info" | "warn" | "error"): Entry {
  return { kind: "notice", id: `notice-${seq}`, text, tone };
}

function removeFirst(list: string[], value: string): string[] {
  const at = list.indexOf(value);
  return at === -1 ? list : [...list.slice(0, at), ...list.slice(at + 1)];
}

function setFiles(
  files: ThreadView["files"],
  itemId: string,
  paths: string[],
  state: FileState,
): ThreadView["files"] {
  const current = { ...(files[itemId] ?? {}) };
  for (const path of paths) current[path] = state;
  return { ...files, [itemId]: current };
}

/** The diff paths of patch `itemId` that an undo restored (a move is restored under its source too). */
function undonePaths(view: ThreadView, itemId: string, restored: string[]): string[] {
  const entry = view.entries.find((candidate) => candidate.id === itemId);
  if (entry?.kind !== "tool" || entry.display?.kind !== "diff") return restored;
  return entry.display.files
    .filter(
      (file) => restored.includes(file.path) || (file.from !== undefined && restored.includes(file.from)),
    )
    .map((file) => file.path);
}
