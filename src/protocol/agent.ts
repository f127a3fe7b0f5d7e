/**
 * The agent host protocol: agent threads over one WebSocket for the web app and editors, and the
 * in-process interface the terminal UI uses. Thread / turn / item, like other coding-agent front ends.
 */
import type { WireError } from "./errors.js";
import type { WorktreeRef } from "./worktree-name.js";

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

/**
 * What a session changed (`thread.diff`, `/diff`): each file its edits touched, from before the
 * first edit to now. `omitted`: files changed but not shown (over the bounds, binary, too big);
 * `notes`: what else the person should know (edits too big to keep).
 */
export interface SessionDiff {
  files: FileDiff[];
  omitted: string[];
  notes: string[];
}

/** An error a language server reported in a file an edit changed, introduced by that edit (1-based). */
export interface EditDiagnostic {
  path: string;
  line: number;
  column: number;
  message: string;
}

export type ToolDisplay =
  | {
      kind: "diff";
      files: FileDiff[];
      /** Errors the edit introduced, as the language servers reported them; absent when none. */
      diagnostics?: EditDiagnostic[];
      /** Why some files were not checked (a server missing, starting, late); absent when none. */
      diagnosticsNotices?: string[];
    }
  | { kind: "command"; command: string; exitCode: number | null; output: string };

/**
 * How a turn runs. `plan`: only read-only tools run (edits, commands, sub-agents and MCP tools are
 * refused with an error the model reads) and the model answers with a plan; `default`: every tool.
 * The tool list and instructions are the same in both, so switching keeps the prompt prefix.
 */
export const AGENT_MODES = ["default", "plan"] as const;
export type AgentMode = (typeof AGENT_MODES)[number];

export type ThreadItem =
  /**
   * `mode: "plan"` marks the message that started a plan-mode turn; `steer: true` one sent while a
   * turn ran, which belongs to that turn (pickers list turns by their first message only).
   */
  | { type: "user_message"; id: string; text: string; mode?: "plan"; steer?: true }
  | { type: "agent_message"; id: string; text: string }
  /**
   * What a reasoning model thought before it answered (Qwen3's `<think>`, gpt-oss's analysis; the
   * Responses API's `reasoning` item). Streamed like a message; never sent back to the model.
   */
  | { type: "reasoning"; id: string; text: string }
  | {
      type: "tool_call";
      id: string;
      name: string;
      arguments: string;
      status: "running" | "completed" | "failed";
      output?: string;
      display?: ToolDisplay;
      /**
       * The model was stopped while it wrote the call (interrupt, steer): `arguments` is what it
       * had written, nothing was run (`status: "failed"`), and the call is not part of the
       * conversation the model sees.
       */
      partial?: true;
    }
  | { type: "notice"; id: string; text: string };

export type TurnStatus = "completed" | "interrupted" | "failed";

/**
 * Which limit ended a turn (`turn.completed`'s `reason`; absent when none did): the reply reached
 * its output cap (`max_output_tokens`), the model was repeating itself (`repetition`), the turn ran
 * its rounds of tool calls (`max_tool_rounds`), or its time ran out (`timeout`, set by the face that
 * timed it, e.g. `spark exec --timeout`). `error.message` says it in words for the person.
 */
export const TURN_END_REASONS = ["max_output_tokens", "repetition", "max_tool_rounds", "timeout"] as const;
export type TurnEndReason = (typeof TURN_END_REASONS)[number];

/**
 * What a rewind (`thread.rewind`) takes back to before a turn: the files the agent changed since,
 * the conversation (its items), or both.
 */
export const REWIND_RESTORES = ["code", "conversation", "both"] as const;
export type RewindRestore = (typeof REWIND_RESTORES)[number];

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

/**
 * How full a thread's context is, as the agent knows it: the last model response's input (cached
 * tokens included) and output, against the model's context window. Every face shows it as a meter.
 */
export interface ContextUsage {
  /** Tokens the conversation holds now (after a compaction: the agent's estimate until the next response says). */
  used_tokens: number;
  /** The model's context window: the conversation's token budget. */
  window_tokens: number;
  /** Past this many tokens, older turns are compacted before the next request (`compact_at` of the window). */
  compact_at_tokens: number;
}

export interface ThreadInfo {
  id: string;
  title: string;
  cwd: string;
  model: string;
  createdAt: string;
  updatedAt: string;
  /** The scheduler tier its requests run on, where the server has tiers. Default: absent. */
  tier?: string;
  /** The mode of its next turns when a turn names none (see AgentMode). Absent: `default`. */
  mode?: AgentMode;
  /** The Spark worktree `cwd` is (`spark --worktree`, `thread.start {worktree}`). Absent: none. */
  worktree?: WorktreeRef;
}

/**
 * Where an approved command runs. `workspace-write`: the workspace writable except `.git` and
 * `.spark`, the rest of the filesystem read-only, a private `/tmp`, no network.
 * `workspace-write-network`: the same with the network. `danger-full-access`: no sandbox.
 */
export const SANDBOX_MODES = ["workspace-write", "workspace-write-network", "danger-full-access"] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

/** How every face words a sandbox mode beside a command waiting for approval. */
export function sandboxLabel(mode: SandboxMode): string {
  switch (mode) {
    case "workspace-write":
      return "sandboxed: workspace, no network";
    case "workspace-write-network":
      return "sandboxed: workspace, with network";
    case "danger-full-access":
      return "NOT sandboxed: full filesystem and network access";
    default: {
      const unknown: never = mode;
      throw new Error(`Unknown sandbox mode: ${String(unknown)}`);
    }
  }
}

/** A side effect waiting for the person's approval, discriminated by `kind`. */
export type ApprovalRequestEvent = ShellApprovalRequest | McpApprovalRequest;

/** A command the `shell` tool would run. */
export interface ShellApprovalRequest {
  approval_id: string;
  kind: "shell";
  command: string;
  cwd: string;
  /** The sandbox the command will run in once approved. */
  sandbox: SandboxMode;
}

/** A call of an MCP server's tool (`mcp__SERVER__TOOL`). */
export interface McpApprovalRequest {
  approval_id: string;
  kind: "mcp";
  /** The server's name in config.toml. */
  server: string;
  /** The tool's own name on that server. */
  tool: string;
  /** The call's arguments as JSON text, cut to at most 4 KiB (ending in "…" when cut). */
  arguments: string;
}

/** One line naming what an approval would do: `$ COMMAND`, or `SERVER · TOOL` for an MCP call. */
export function approvalTitle(approval: ApprovalRequestEvent): string {
  switch (approval.kind) {
    case "shell":
      return `$ ${approval.command}`;
    case "mcp":
      return `${approval.server} · ${approval.tool}`;
    default: {
      const unknown: never = approval;
      throw new Error(`Unknown approval kind: ${String((unknown as { kind: unknown }).kind)}`);
    }
  }
}

export type McpServerState = "starting" | "ready" | "failed" | "stopped";

/** One MCP server the agent uses, as every face lists it (`/mcp`, the web app's panel). */
export interface McpServerInfo {
  /** Its name in config.toml (`[mcp_servers.NAME]`); tools reach the model as `mcp__NAME__TOOL`. */
  name: string;
  state: McpServerState;
  transport: "stdio" | "http";
  /** Which config declared it; a project's servers need `spark trust`. */
  source: "user" | "project";
  /** Its calls run without asking. */
  trusted: boolean;
  /** The model-facing names of its tools (empty until it is ready). */
  tools: string[];
  /** Why it failed or stopped, in words for the person. */
  error?: string;
}

/** A SKILL.md skill, as every face lists it (`/skills`). */
export interface CatalogSkillInfo {
  name: string;
  description: string;
  /** The person's config folder, or the repository's `.agents/skills/`. */
  source: "user" | "project";
  /** Its SKILL.md: relative to the repository, or absolute for the person's own. */
  file: string;
}

/** An agent people defined, as every face lists it (`/agents`); `delegate` runs sub-agents as it. */
export interface CatalogAgentInfo {
  name: string;
  description: string;
  source: "user" | "project";
  file: string;
  /** The tools it may use (within its parent's); absent: all of its parent's but `delegate`. */
  tools?: string[];
  /** The tier it runs on; absent: the delegate tier. */
  tier?: string;
}

export type SubAgentStatus = "running" | "completed" | "failed" | "cancelled";

/** A sub-agent a thread delegated a task to (the `delegate` tool); it runs in the background. */
export interface SubAgentInfo {
  id: string;
  task: string;
  /** The model (tier) it runs on. */
  model: string;
  status: SubAgentStatus;
  /** Output tokens streamed so far (approximate: one per delta). */
  outputTokens: number;
  /** What it did last, e.g. `read_file` or `writing`. */
  progress: string;
}

/** Events of one thread; the host stamps `thread_id` and a per-thread `seq`. */
export type ThreadEvent =
  | { type: "thread.started"; thread: ThreadInfo }
  | { type: "turn.started"; turn_id: string; input: string }
  /**
   * `input` will run as a turn of its own once the running one (and those queued before it) end;
   * `turn_id` is the id its `turn.started` will carry (always sent by this host; absent from older ones).
   */
  | { type: "turn.queued"; turn_id?: string; input: string }
  | { type: "item.started"; turn_id: string; item: ThreadItem }
  | { type: "item.delta"; turn_id: string; item_id: string; delta: string }
  | { type: "item.completed"; turn_id: string; item: ThreadItem }
  | { type: "turn.steered"; turn_id: string; input: string }
  | {
      type: "turn.completed";
      turn_id: string;
      status: TurnStatus;
      stats: TurnStats;
      error?: WireError;
      reason?: TurnEndReason;
    }
  /**
   * `call_id`: the tool call (its `tool_call` item's `id`) that waits for the answer; a sub-agent's
   * call for its approvals (not an item of this thread). Always sent by this host; absent from older ones.
   */
  | ({ type: "approval.requested"; turn_id: string; call_id?: string } & ApprovalRequestEvent)
  /** `turn_id` and `call_id` are the request's (absent from hosts older than them). */
  | { type: "approval.resolved"; approval_id: string; approved: boolean; turn_id?: string; call_id?: string }
  /**
   * The thread went back to just before the turn started by user message `item_id`. `paths`: the
   * files restored (relative to the workspace; empty unless `restore` covers code). With
   * `restore` "conversation" or "both" the items from `item_id` on are gone: every face cuts its
   * view there (the message's `text` is the one to offer for editing).
   */
  | { type: "thread.rewound"; item_id: string; restore: RewindRestore; paths: string[]; text: string }
  /**
   * How full the context is (see ContextUsage): sent after each model response, after a compaction
   * and when a resumed thread's conversation was measured. `turn_id`: the turn it happened in
   * (absent outside one, e.g. `/compact` between turns).
   */
  | { type: "context.updated"; turn_id?: string; context: ContextUsage }
  | { type: "subagent.started"; subagent: SubAgentInfo }
  | { type: "subagent.progress"; subagent_id: string; output_tokens: number; progress: string }
  | {
      type: "subagent.completed";
      subagent_id: string;
      status: Exclude<SubAgentStatus, "running">;
      result?: string;
      error?: string;
    };

/** How a person settled one file of an applied patch. */
export type PatchResolution = "accepted" | "rejected";

/**
 * Events the agent host adds to a thread's stream when a client acts on the thread; they are
 * stamped and replayed like the thread's own events.
 */
export type HostThreadEvent =
  /**
   * The items of a resumed session, sent once right after `thread.started`. With `reset`, a
   * snapshot sent to one resuming client whose events cannot be continued (another epoch, a
   * `seq` the host never reached, or events no longer kept): every item so far, as of its `seq`;
   * the client replaces its view of the thread with it, and live events follow.
   */
  | { type: "thread.history"; items: ThreadItem[]; reset?: true; thread?: ThreadInfo }
  | { type: "thread.renamed"; thread: ThreadInfo }
  /**
   * The newest patch was reverted byte for byte. `item_id` is the tool call that applied it (null
   * when unknown); `paths` are the restored files, relative to the workspace.
   */
  | { type: "patch.undone"; item_id: string | null; paths: string[] }
  /**
   * One file of the patch applied by tool call `item_id` was accepted (kept) or rejected (restored
   * to its content from before that patch). `path` is as in the item's FileDiff.
   */
  | { type: "patch.resolved"; item_id: string; path: string; resolution: PatchResolution };

/** What a review looks at (`thread.review`): the working tree's changes, a branch's since it left `base`, or one commit's. */
export type ReviewTarget =
  | { kind: "uncommitted" }
  | { kind: "base"; base: string }
  | { kind: "commit"; sha: string };

/** One problem a review found, on lines of the diff's new side (`file` relative to the repository root). */
export interface ReviewFinding {
  file: string;
  start_line: number;
  end_line: number;
  severity: "error" | "warning" | "note";
  title: string;
  explanation: string;
}

/**
 * A review's result, as `spark review --format json` writes it: `target` as said to a person
 * ("uncommitted changes", "main...HEAD"), `dropped` findings that were not on the diff's lines or
 * not well formed, `truncated` when the diff was cut to fit the model's context.
 */
export interface ReviewReport {
  version: 1;
  target: string;
  findings: ReviewFinding[];
  dropped: number;
  truncated: boolean;
}

export type HostEvent =
  /**
   * `epoch` is chosen at random when the host starts: sequence numbers of one epoch mean nothing in
   * another (the server restarted).
   */
  | ((ThreadEvent | HostThreadEvent) & { thread_id: string; seq: number; epoch: string })
  | { type: "thread.list"; threads: ThreadInfo[] }
  /**
   * The answer to `workspace.files` (before its `ack`): the workspace files that match `query` best,
   * best first, as paths relative to the thread's workspace. Never stamped.
   */
  | { type: "workspace.files"; request_id?: string; query: string; files: string[] }
  /** The answer to `thread.diff` (before its `ack`): what the session changed. Never stamped. */
  | ({ type: "thread.diff"; request_id?: string; thread_id: string } & SessionDiff)
  /**
   * How a `thread.review` goes (the diff read, a file the reviewer reads), to the client that asked,
   * before its answer. Never stamped.
   */
  | { type: "review.progress"; request_id?: string; thread_id: string; message: string }
  /**
   * The answer to `thread.review` (before its `ack`): the findings, and `notes` for a person (each
   * dropped finding's reason, a cut diff, nothing to review). Never stamped.
   */
  | ({ type: "thread.review"; request_id?: string; thread_id: string; notes: string[] } & ReviewReport)
  /**
   * A session to add to the list a client holds, or to replace there (same `id`): sent to every
   * client when a session gets its first user message, a new title, or a finished turn, unless
   * the client last listed another workspace. Never stamped.
   */
  | { type: "thread.listed"; thread: ThreadInfo }
  /** The thread and its transcript are gone; sent to the requester and the thread's subscribers. */
  | { type: "thread.deleted"; thread_id: string }
  /**
   * The request with this `request_id` took effect (`thread.start` / `thread.resume`: after the
   * thread's `thread.started` or history reached this client, with its `thread_id`; `turn.start`:
   * right after its `turn.started` and before any other event of the turn, with its `turn_id`;
   * `turn.queue`: with the `turn_id` of the turn it queued or started). Sent only for requests that
   * carry a `request_id`; never stamped.
   */
  | { type: "ack"; request_id: string; thread_id?: string; turn_id?: string }
  /**
   * A request failed; `request_id` is the failed request's, when it carried one; `status` the HTTP
   * status of the error (as on the Responses WebSocket's `error` events). Never stamped.
   */
  | { type: "error"; error: WireError; status?: number; request_id?: string }
  /**
   * The agent's MCP servers, whole: sent to each client when it connects and to every client when
   * any server's state or tools change (bursts coalesced). Never stamped. A host without MCP
   * servers to list sends none; clients then list none. Bounds: `MCP_SERVERS_LIMITS` (mcp-servers.ts).
   */
  | { type: "mcp.servers"; servers: McpServerInfo[] }
  /**
   * The skills and defined agents of the host's workspace, read when it started: sent to each
   * client when it connects. A host without any sends none. Bounds: `CATALOG_LIMITS` (catalog.ts).
   */
  | { type: "catalog"; skills: CatalogSkillInfo[]; agents: CatalogAgentInfo[] }
  /**
   * The models (tiers) a thread may switch to with `thread.set_model`, as `thread.set_model` names
   * them: sent to each client when it connects. A host with none to offer sends none.
   */
  | { type: "models"; models: string[] }
  /**
   * The agent prompt (system prompt, tools, AGENTS.md) being evaluated, which starts when the model
   * loads: `evaluated_tokens` of `total_tokens` (both 0 until the engine says, and when the prompt
   * was cached), never going back; sent to each client on connecting while it runs, to every client
   * as it goes, and once more with `done: true` when it ends. A new thread's start waits for it.
   * Never stamped.
   */
  | { type: "prompt.progress"; evaluated_tokens: number; total_tokens: number; done: boolean };
