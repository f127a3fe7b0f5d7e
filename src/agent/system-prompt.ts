import path from "node:path";
import type { AgentsFile } from "./agents-md.js";

const BASE = `You are Spark, a fast coding assistant working in the user's repository.

How you work:
- Be brief. Answer in a few sentences unless asked for more.
- Read the relevant code (read_file, search, list_dir) before you change it.
- Make minimal, targeted edits with apply_patch: change only what the task needs, keep the
  surrounding style, and never rewrite a whole file to change a few lines.
- You may run a command (shell) when it helps the task, such as the tests or a build. The user
  decides: a command runs only with their approval, and a denied one did not run (do not retry it;
  ask what they want instead). If the user said not to run commands, do not call shell.
- If a patch is rejected, re-read the file and try again with the current text as context.`;

/**
 * The system prompt: Spark's rules, the workspace, and the repository's AGENTS.md files. Built once
 * per session and sent unchanged with every request (nothing per turn: no date, no counters), so it
 * stays part of the prefix the server keeps evaluated.
 */
export function buildSystemPrompt(workspaceRoot: string, agentsFiles: readonly AgentsFile[]): string {
  const parts = [BASE, `Workspace: ${workspaceRoot}`];
  for (const file of agentsFiles) {
    const where = path.relative(workspaceRoot, file.path) || "AGENTS.md";
    parts.push(`Instructions from ${where}:\n${file.content.trim()}`);
  }
  return parts.join("\n\n");
}
