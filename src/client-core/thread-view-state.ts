import type {
  ApprovalRequestEvent,
  ContextUsage,
  PatchResolution,
  SubAgentInfo,
  ThreadInfo,
  ThreadItem,
  TurnEndReason,
  TurnStats,
  TurnStatus,
} from "../protocol/agent.js";
import type { WireError } from "../protocol/errors.js";

// The shape of a thread view (what the reducer in thread-view.ts makes, and view-items.ts updates).

export type ToolCallItem = Extract<ThreadItem, { type: "tool_call" }>;

/** `dim`: a by-the-way note (an item notice, an approval given, a sub-agent started). */
export type Tone = "dim" | "info" | "warn" | "error";

/**
 * How one file of a patch was settled: by the host (`accepted`, `rejected`), reverted by an undo
 * (`undone`), or reviewed hunk by hunk in an editor, some hunks kept and others not (`partly accepted`).
 */
export type FileState = PatchResolution | "undone" | "partly accepted";

/** One thing shown in the conversation, keyed by the id of the item it renders. */
export type Entry =
  /** `steer`: sent while a turn ran, to redirect it (announced by `turn.steered`); `plan`: it started a plan-mode turn. */
  | { kind: "user"; id: string; text: string; steer: boolean; plan?: true }
  | { kind: "agent"; id: string; text: string; streaming: boolean }
  /** `files`: how each file of the call's diff was settled, by its path. */
  | { kind: "tool"; id: string; item: ToolCallItem; files: Record<string, FileState> }
  | { kind: "notice"; id: string; text: string; tone: Tone };

/** The running turn, measured on arrival (times are the `now` given to the reducer, in ms). */
export interface LiveTurn {
  id: string;
  input: string;
  startedAt: number;
  /** The first streamed delta, or the first tool call when the model's first output is a call. */
  firstTokenAt: number | null;
  /** Streamed deltas of the turn so far (text and tool-call arguments), and when the first and the latest arrived. */
  deltas: number;
  firstDeltaAt: number | null;
  lastDeltaAt: number | null;
}

export interface TurnRecord {
  id: string;
  status: TurnStatus;
  stats: TurnStats;
  error?: WireError;
  /** The limit that ended the turn, if one did. */
  reason?: TurnEndReason;
  /** How many entries the view held when the turn ended: a face that shows turn ends inline puts it after them. */
  after: number;
}

export type PendingApproval = ApprovalRequestEvent & { turn_id: string };

/** A sub-agent the thread delegated to, with its result or error once it ended. */
export type SubAgentView = SubAgentInfo & { result?: string; error?: string };

/** Everything a face shows of one thread, rebuilt only from the thread's events. Immutable. */
export interface ThreadView {
  /** The thread id the view was made for ("" when not known yet). */
  id: string;
  info: ThreadInfo | null;
  /** The last event applied; a replayed one at or below it (same epoch) is ignored. */
  lastSeq: number;
  /** The host epoch `lastSeq` belongs to (null before the first event). */
  epoch: string | null;
  entries: Entry[];
  turn: LiveTurn | null;
  /** Finished turns, oldest first. */
  turns: TurnRecord[];
  /** Messages queued behind the running turn, in order. */
  queued: string[];
  /** Approvals still waiting for an answer, oldest first. */
  approvals: PendingApproval[];
  /** Steers announced by `turn.steered` whose user message has not arrived yet. */
  pendingSteers: number;
  subAgents: SubAgentView[];
  /** How full the context is, as the agent last said (`context.updated`); null before it says. */
  context: ContextUsage | null;
  /** How many notices the reducer made: their ids, so the reducer stays pure. */
  notices: number;
}
