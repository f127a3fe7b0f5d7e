/**
 * The agent host protocol: agent threads over one WebSocket for the web app and editors, and the
 * in-process interface the terminal UI uses. Thread / turn / item, like other coding-agent front ends.
 */
import type { WireError } from "./errors.js";

/** One line of a hunk; `text` is without its line ending. */
export interface DiffLine {
  kind: "context" | "add" | "remove";
  text: string;
  /** Set on the last line of a side that does not end with a newline. */
  noNewline?: true;
}

/**
 * A run of changes with its context, numbered as in unified diff: starts are 1-based, and a side
 * with no lines has `start` = the line after which the other side's lines go (0 for an empty file).
 */
export interface DiffHunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

/** The change to one file, rendered alike by the terminal UI and the web app. */
export interface FileDiff {
  /** The file's path relative to the workspace (the destination for a move). */
  path: string;
  kind: "add" | "update" | "delete" | "move";
  /** The source path of a move. */
  from?: string;
  hunks: DiffHunk[];
  added: number;
  removed: number;
}

export type ToolDisplay =
  | { kind: "diff"; files: FileDiff[] }
  | { kind: "command"; command: string; exitCode: number | null; output: string };

export type ThreadItem =
  | { type: "user_message"; id: string; text: string }
  | { type: "agent_message"; id: string; text: string }
  | {
      type: "tool_call";
      id: string;
      name: string;
      arguments: string;
      status: "running" | "completed" | "failed";
      output?: string;
      display?: ToolDisplay;
    }
  | { type: "notice"; id: string; text: string };

export type TurnStatus = "completed" | "interrupted" | "failed";

/** Per-turn measurements, for the live meter and the latency chart. */
export interface TurnStats {
  /** From the turn's start to its first streamed token. */
  timeToFirstTokenMs: number | null;
  /** Output tokens per second, over the turn's model responses. */
  tokensPerSecond: number | null;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
}

export interface ThreadInfo {
  id: string;
  title: string;
  cwd: string;
  model: string;
  createdAt: string;
  updatedAt: string;
}

export interface ApprovalRequestEvent {
  approval_id: string;
  kind: "shell";
  command: string;
  cwd: string;
}

/** Events of one thread; the host stamps `thread_id` and a per-thread `seq`. */
export type ThreadEvent =
  | { type: "thread.started"; thread: ThreadInfo }
  | { type: "turn.started"; turn_id: string; input: string }
  | { type: "turn.queued"; input: string }
  | { type: "item.started"; turn_id: string; item: ThreadItem }
  | { type: "item.delta"; turn_id: string; item_id: string; delta: string }
  | { type: "item.completed"; turn_id: string; item: ThreadItem }
  | { type: "turn.steered"; turn_id: string; input: string }
  | { type: "turn.completed"; turn_id: string; status: TurnStatus; stats: TurnStats; error?: WireError }
  | ({ type: "approval.requested"; turn_id: string } & ApprovalRequestEvent)
  | { type: "approval.resolved"; approval_id: string; approved: boolean };

export type HostEvent =
  | (ThreadEvent & { thread_id: string; seq: number })
  | { type: "thread.list"; threads: ThreadInfo[] }
  | { type: "error"; error: WireError };
