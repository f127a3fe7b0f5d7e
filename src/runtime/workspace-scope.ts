import { discoverAgentsFiles } from "../agent/agents-md.js";
import { EditDiagnostics } from "../agent/diagnostics/edit-diagnostics.js";
import { CommandSandbox } from "../agent/sandbox/command-sandbox.js";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import { Workspace } from "../agent/workspace.js";
import { isProjectTrusted } from "../config/project-trust.js";
import type { SandboxMode } from "../protocol/agent.js";

/**
 * What a thread needs of the directory it works in: the workspace its tools are confined to, the
 * system prompt (with that tree's AGENTS.md files) and its language servers. The runtime has one for
 * its own workspace, and one for each other tree a thread was started in (a Spark worktree).
 */
export interface WorkspaceScope {
  workspace: Workspace;
  instructions: string;
  /** Null with `[diagnostics] enabled = false`. */
  diagnostics: EditDiagnostics | null;
}

export interface WorkspaceScopeOptions {
  /** Whether edits are checked by language servers. Default: true. */
  diagnostics?: boolean;
  /** Where the language servers run (they run in the command sandbox). Default: workspace-write. */
  sandbox?: SandboxMode;
  /** Said when an AGENTS.md cannot be read. */
  onNotice?: (message: string) => void;
}

/** The scope of `cwd`; its language servers start on the first edit they check. */
export async function openWorkspaceScope(
  cwd: string,
  options: WorkspaceScopeOptions = {},
): Promise<WorkspaceScope> {
  const workspace = new Workspace(cwd);
  const instructions = buildSystemPrompt(
    workspace.root,
    await discoverAgentsFiles(workspace.root, options.onNotice ? { onUnreadable: options.onNotice } : {}),
  );
  const diagnostics =
    options.diagnostics === false
      ? null
      : new EditDiagnostics({
          root: workspace.root,
          sandbox: new CommandSandbox({ mode: options.sandbox ?? "workspace-write" }),
          projectTrusted: () => isProjectTrusted(workspace.root),
        });
  return { workspace, instructions, diagnostics };
}
