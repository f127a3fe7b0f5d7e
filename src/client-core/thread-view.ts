import type { FileDiff, HostEvent } from "../protocol/agent.js";
import { approvalTitle } from "../protocol/agent.js";
import type {
  Entry,
  FileState,
  LiveTurn,
  ThreadView,
  Tone,
  ToolCallItem,
  TurnRecord,
} from "./thread-view-state.js";
import { delta, entryOf, upsertItem } from "./view-items.js";

/**
 * The one thread-view reducer of every face (terminal UI, web app, VS Code extension): a pure
 * function from a view and one event to the next view. Each face renders the view its own way; how
 * events change what is shown is decided here, once (item events in view-items.ts; the turn's
 * numbers in turn-meter.ts).
 */

/** A thread event as the host sends it: stamped with its thread, per-thread `seq` and host `epoch`. */
export type StampedEvent = Extract<HostEvent, { seq: number }>;

export type {
  Entry,
  FileState,
  LiveTurn,
  PendingApproval,
  SubAgentView,
  ThreadView,
  Tone,
  ToolCallItem,
  TurnRecord,
} from "./thread-view-state.js";

/** What views act on: the host's events, and actions of the face itself. */
export type ViewAction =
  | StampedEvent
  | { type: "local.notice"; text: string; tone: Tone }
  /** A file of patch `itemId` settled by the face itself (an editor's hunk-by-hunk review). */
  | { type: "local.patch"; itemId: string; path: string; state: FileState };

export function emptyView(id = ""): ThreadView {
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
    pendingSteers: 0,
    subAgents: [],
    context: null,
    notices: 0,
  };
}

/**
 * Applies one action. A stamped event at or below the view's `seq` (same epoch) returns the same
 * view, so a reconnect that replays events can neither lose nor repeat text. `thread.started` (the
 * first event of a thread's stream), an event of another epoch (the server restarted) and a
 * `thread.history` reset start the view over. Never throws: an event or item this face does not
 * know (a newer host) is shown as a notice, once per type.
 */
export function reduceView(view: ThreadView, action: ViewAction, now: number): ThreadView {
  if (action.type === "local.notice") return withNotice(view, action.text, action.tone);
  if (action.type === "local.patch") return setFiles(view, action.itemId, [action.path], action.state);
  if (startsOver(view, action))
    view = {
      ...emptyView(view.id || action.thread_id),
      info: view.info,
      // A snapshot of the same thread keeps the meter until the agent measures again.
      context: action.type === "thread.started" ? null : view.context,
    };
  else if (action.seq <= view.lastSeq) return view;
  return reduceEvent({ ...view, lastSeq: action.seq, epoch: action.epoch }, action, now);
}

/**
 * Whether `event` makes {@link reduceView} start the view over: `thread.started`, a `thread.history`
 * reset, or an event of another epoch. A face that keeps what it already printed (the terminal)
 * uses it to know that the view's entries begin anew.
 */
export function startsOver(view: ThreadView, event: StampedEvent): boolean {
  return (
    event.type === "thread.started" ||
    (event.type === "thread.history" && event.reset === true) ||
    (view.epoch !== null && typeof event.epoch === "string" && event.epoch !== view.epoch)
  );
}

function reduceEvent(view: ThreadView, event: StampedEvent, now: number): ThreadView {
  switch (event.type) {
    case "thread.started":
    case "thread.renamed":
      return { ...view, info: event.thread };
    // History is the whole thread so far: it replaces the entries, never appends to them.
    case "thread.history":
      return {
        ...view,
        info: event.thread ?? view.info,
        entries: event.items.map((item) =>
          entryOf(item, { completed: true, steer: false, existing: undefined }),
        ),
      };
    case "turn.queued":
      return { ...view, queued: [...view.queued, event.input] };
    case "turn.started": {
      // The queue's head leaves when its turn starts; a turn started otherwise leaves the queue as is.
      const queued = view.queued[0] === event.input ? view.queued.slice(1) : view.queued;
      const turn: LiveTurn = {
        id: event.turn_id,
        input: event.input,
        startedAt: now,
        firstTokenAt: null,
        deltas: 0,
        firstDeltaAt: null,
        lastDeltaAt: null,
      };
      return { ...view, queued, turn, pendingSteers: 0 };
    }
    // The steer mark goes on the next new user message (the host sends it right after), never by text.
    case "turn.steered":
      return { ...view, pendingSteers: view.pendingSteers + 1 };
    case "item.started":
    case "item.completed":
      return upsertItem(view, event.item, event.type === "item.completed", now);
    case "item.delta":
      return delta(view, event.item_id, event.delta, now);
    case "turn.completed":
      return turnCompleted(view, event);
    case "approval.requested": {
      const { type: _, thread_id: __, seq: ___, epoch: ____, ...approval } = event;
      return { ...view, approvals: [...view.approvals, approval] };
    }
    case "approval.resolved": {
      const approval = view.approvals.find((candidate) => candidate.approval_id === event.approval_id);
      const approvals = view.approvals.filter((candidate) => candidate.approval_id !== event.approval_id);
      if (!approval) return { ...view, approvals };
      const text = `${event.approved ? "Approved" : "Denied"}: ${approvalTitle(approval)}`;
      return withNotice({ ...view, approvals }, text, event.approved ? "dim" : "warn");
    }
    case "patch.resolved":
      return setFiles(view, event.item_id, [event.path], event.resolution);
    case "patch.undone": {
      const noted = withNotice(view, `Undone: ${event.paths.join(", ")}`, "info");
      if (event.item_id === null) return noted;
      return setFiles(noted, event.item_id, undonePaths(view, event.item_id, event.paths), "undone");
    }
    case "thread.rewound":
      return rewound(view, event);
    case "context.updated":
      return { ...view, context: event.context };
    case "subagent.started": {
      const { subagent } = event;
      const subAgents = [...view.subAgents.filter((sub) => sub.id !== subagent.id), { ...subagent }];
      return withNotice({ ...view, subAgents }, `Sub-agent ${subagent.id} started: ${subagent.task}`, "dim");
    }
    case "subagent.progress":
      return {
        ...view,
        subAgents: view.subAgents.map((sub) =>
          sub.id === event.subagent_id
            ? { ...sub, outputTokens: event.output_tokens, progress: event.progress }
            : sub,
        ),
      };
    case "subagent.completed": {
      const subAgents = view.subAgents.map((sub) =>
        sub.id === event.subagent_id
          ? {
              ...sub,
              status: event.status,
              ...(event.result === undefined ? {} : { result: event.result }),
              ...(event.error === undefined ? {} : { error: event.error }),
            }
          : sub,
      );
      const how = event.status === "completed" ? "finished" : event.status;
      const tone = event.status === "failed" ? "error" : event.status === "cancelled" ? "warn" : "dim";
      const text = `Sub-agent ${event.subagent_id} ${how}${event.error ? `: ${event.error}` : ""}`;
      return withNotice({ ...view, subAgents }, text, tone);
    }
    default: {
      const unknown: never = event;
      return unknownEvent(view, (unknown as { type: string }).type);
    }
  }
}

/** A newer host's event: shown once per type, so an unknown per-token event cannot flood the view. */
function unknownEvent(view: ThreadView, type: string): ThreadView {
  const text = `This view does not know the event "${type}" (a newer Spark?); it was ignored.`;
  if (view.entries.some((entry) => entry.kind === "notice" && entry.text === text)) return view;
  return withNotice(view, text, "warn");
}

function turnCompleted(
  view: ThreadView,
  event: Extract<StampedEvent, { type: "turn.completed" }>,
): ThreadView {
  const record: TurnRecord = {
    id: event.turn_id,
    status: event.status,
    stats: event.stats,
    ...(event.error ? { error: event.error } : {}),
    ...(event.reason ? { reason: event.reason } : {}),
    after: view.entries.length,
  };
  let next: ThreadView = {
    ...view,
    turn: null,
    turns: [...view.turns, record],
    pendingSteers: 0,
    // A turn's approvals end with it; a sub-agent's may outlive it.
    approvals: view.approvals.filter((approval) => approval.turn_id !== event.turn_id),
    entries: view.entries.map((entry) =>
      entry.kind === "agent" && entry.streaming ? { ...entry, streaming: false } : entry,
    ),
  };
  if (event.status === "interrupted") {
    // An interrupt drops what was queued behind the turn (the host does the same).
    const dropped = view.queued.length;
    next = { ...next, queued: [] };
    const note = dropped > 0 ? ` ${dropped} queued message${dropped > 1 ? "s" : ""} dropped.` : "";
    next = withNotice(next, `Interrupted.${note}`, "warn");
  } else if (event.status === "failed" && event.reason) {
    // A limit ended it: its message says so ("Stopped: the model was repeating itself...").
    next = withNotice(next, event.error?.message ?? `Stopped (${event.reason}).`, "warn");
  } else if (event.status === "failed") {
    // The queue is kept: the host runs the queued messages next, failed turn or not.
    next = withNotice(next, `Error: ${event.error?.message ?? "the turn failed."}`, "error");
  }
  return next;
}

/**
 * A rewind: with the conversation, the entries from the turn's user message on are gone (and the
 * turns that ended after it); either way a notice says what went back.
 */
function rewound(view: ThreadView, event: Extract<StampedEvent, { type: "thread.rewound" }>): ThreadView {
  const files = event.paths.length > 0 ? `restored ${event.paths.join(", ")}` : "no files to restore";
  const quoted = `"${event.text.split("\n")[0]!.slice(0, 60)}"`;
  const cut = view.entries.findIndex((entry) => entry.kind === "user" && entry.id === event.item_id);
  if (event.restore === "code") {
    // The patches from that turn on are taken back: their files show as undone.
    let undone = view;
    for (const entry of cut === -1 ? [] : view.entries.slice(cut)) {
      const display = entry.kind === "tool" ? entry.item.display : undefined;
      if (display?.kind !== "diff") continue;
      const paths = display.files.map((file) => file.path).filter((path) => event.paths.includes(path));
      undone = setFiles(undone, entry.id, paths, "undone");
    }
    return withNotice(undone, `Rewound the code to before ${quoted}: ${files}.`, "info");
  }
  const kept =
    cut === -1
      ? view
      : {
          ...view,
          entries: view.entries.slice(0, cut),
          turns: view.turns.filter((turn) => turn.after <= cut),
        };
  const what = event.restore === "both" ? `conversation and code (${files})` : "conversation";
  return withNotice(kept, `Rewound the ${what} to before ${quoted}.`, "info");
}

function withNotice(view: ThreadView, text: string, tone: Tone): ThreadView {
  const notices = view.notices + 1;
  return {
    ...view,
    notices,
    entries: [...view.entries, { kind: "notice", id: `notice-${notices}`, text, tone }],
  };
}

function setFiles(view: ThreadView, itemId: string, paths: string[], state: FileState): ThreadView {
  const at = view.entries.findIndex((entry) => entry.id === itemId);
  const entry = view.entries[at];
  if (entry?.kind !== "tool") return view;
  const files = { ...entry.files };
  for (const path of paths) files[path] = state;
  const entries = [...view.entries];
  entries[at] = { ...entry, files };
  return { ...view, entries };
}

/** The diff paths of patch `itemId` that an undo restored (a move is restored under its source too). */
function undonePaths(view: ThreadView, itemId: string, restored: string[]): string[] {
  const entry = view.entries.find((candidate) => candidate.id === itemId);
  const files = entry?.kind === "tool" ? diffOf(entry) : null;
  if (!files) return restored;
  return files
    .filter(
      (file) => restored.includes(file.path) || (file.from !== undefined && restored.includes(file.from)),
    )
    .map((file) => file.path);
}

/** The diff of a completed apply_patch call, or null. */
export function diffOf(entry: Entry): FileDiff[] | null {
  if (entry.kind !== "tool" || entry.item.status !== "completed") return null;
  return entry.item.display?.kind === "diff" ? entry.item.display.files : null;
}

/** Tool calls of the running turn that have not finished. */
export function runningTools(view: ThreadView): ToolCallItem[] {
  return view.entries.flatMap((entry) =>
    entry.kind === "tool" && entry.item.status === "running" ? [entry.item] : [],
  );
}

/** The agent message being streamed, if any. */
export function streamingMessage(view: ThreadView): Extract<Entry, { kind: "agent" }> | null {
  for (let at = view.entries.length - 1; at >= 0; at--) {
    const entry = view.entries[at]!;
    if (entry.kind === "agent" && entry.streaming) return entry;
  }
  return null;
}
