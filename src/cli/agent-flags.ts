import type { SandboxMode } from "../protocol/agent.js";
import type { TurnToolChoice } from "../protocol/agent-requests.js";
import type { WorktreeRef } from "../protocol/worktree-name.js";

/** The agent commands' flags (`spark`, `exec`, `resume`, `acp`), as commander parses them (see agent-commands.ts). */
export interface AgentFlags {
  model?: string;
  server?: string;
  apiKey?: string;
  apiKeyFile?: string;
  approval: "ask" | "auto";
  sandbox?: SandboxMode;
  prewarm: boolean;
  cd?: string;
  ctxSize?: number;
  maxToolRounds?: number;
  maxOutputTokens?: number;
  /** `--compact-at`: the share of the context window past which older turns are compacted. */
  compactAt?: number;
  /** `spark exec --timeout`: milliseconds the task may run. */
  timeout?: number;
  json?: boolean;
  toolChoice?: TurnToolChoice;
  /** `spark exec --output-schema FILE`: the file of the JSON Schema the final answer conforms to. */
  outputSchema?: string;
  plan?: boolean;
  last?: boolean;
  /** False with `--no-attach`. */
  attach: boolean;
  /** `--worktree [name]`: run in a Spark worktree (`true`: a new one under a generated name). */
  worktree?: string | true;
  /** The worktree `cd` is, once `--worktree` opened it (see worktree-session.ts). */
  inWorktree?: WorktreeRef;
}
