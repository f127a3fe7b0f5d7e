import type { ResponsesClient } from "../client/responses-client.js";
import type { ThreadInfo, ThreadItem } from "../protocol/agent.js";
import type { TextFormat } from "../protocol/output-format.js";
import type { ApprovalPolicy } from "./approval.js";
import type { Checkpoints } from "./checkpoints.js";
import type { Skill } from "./definitions/skills.js";
import type { EditDiagnostics } from "./diagnostics/edit-diagnostics.js";
import type { HookSet } from "./hooks/thread-hooks.js";
import type { CommandSandbox } from "./sandbox/command-sandbox.js";
import type { DelegateOptions, SubAgentThread } from "./sub-agents.js";
import type { Tool } from "./tools/tool.js";
import type { Workspace } from "./workspace.js";

/**
 * `Sub`: the thread sub-agents run in (AgentThread, which names itself here), a parameter so that
 * this module does not import the thread.
 */
export interface AgentThreadOptions<Sub extends SubAgentThread = SubAgentThread> {
  client: ResponsesClient;
  workspace: Workspace;
  /** The system prompt (see buildSystemPrompt). */
  instructions: string;
  /** Model id sent with each request. Default: "" (the server's default). */
  model?: string;
  /**
   * Whether commands (and untrusted MCP calls) wait for the person's yes. The model may ask for a
   * command on any turn; nothing the person writes changes this. Default: "ask".
   */
  approvalPolicy?: ApprovalPolicy;
  /** Where approved commands run. Default: a `workspace-write` sandbox. */
  sandbox?: CommandSandbox;
  /** The workspace's language servers, for the errors each patch introduced. Default: none asked. */
  diagnostics?: EditDiagnostics;
  /** Token budget of the conversation (the model's context window); see {@link compactAt}. Default: 128K. */
  contextBudget?: number;
  /**
   * The share of {@link contextBudget} past which older turns are compacted (less when the output
   * cap needs the room, never below half), from 0.1 to 0.95 (`compact_at` in config.toml). Default: 0.8.
   */
  compactAt?: number;
  /** Model responses with tool calls one turn may run; the next call ends it. Default: 50. */
  maxToolRounds?: number;
  /**
   * Output tokens one model response may write (`max_output_tokens`); a reply cut there ends the
   * turn with reason `max_output_tokens`. Default: a quarter of {@link contextBudget}, from 256 to
   * 16384 (see defaultMaxOutputTokens).
   */
  maxOutputTokens?: number;
  /** Sampling temperature. Default: the server's. */
  temperature?: number;
  /**
   * Tools beyond Spark's own, e.g. the MCP servers' (McpHub.tools): read when the thread's first
   * turn starts and kept for the whole conversation, since the tool list is part of the prompt
   * prefix. A server that becomes ready later joins the next new thread. Default: none.
   */
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
  moreTools?: () => Tool<any>[];
  /** Offer the `delegate` tool: background sub-agents on this model (tier). Default: none. */
  delegate?: DelegateOptions<Sub>;
  /** The session's skills: `load_skill` is offered when there are any. Default: none. */
  skills?: readonly Skill[];
  /**
   * The only tools offered (by name), Spark's and the extra ones alike: a defined agent's thread
   * (see agentRun). Default: all.
   */
  allowedTools?: readonly string[];
  /**
   * Structured output for every response of the thread (`text.format`): an answer is JSON of the
   * schema, while a call of an offered tool stays possible (see the engine's `format`). Default: text.
   */
  textFormat?: TextFormat;
  /** Items of a saved session to continue. */
  resume?: { thread: ThreadInfo; items: ThreadItem[] };
  /** Where each turn's file changes are kept for `rewind` (see Checkpoints). Default: in memory. */
  checkpoints?: Checkpoints;
  /** Turns waiting behind the running one (`enqueue`); beyond it `limit_reached`. Default: 32. */
  maxQueuedTurns?: number;
  /** UTF-8 bytes of the inputs waiting behind the running turn; beyond it `limit_reached`. Default: 4 MiB. */
  maxQueuedBytes?: number;
  /** Hooks (hooks.json) run at the points of each turn, in {@link sandbox}. Default: none. */
  hooks?: HookSet;
}
