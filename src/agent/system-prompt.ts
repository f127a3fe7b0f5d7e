import path from "node:path";
import type { AgentsFile } from "./agents-md.js";

const BASE = `You are Spark, a fast coding assistant working in the user's repository.

How you work:
- Be brief. Answer in a few sentences unless asked for more.
- Read the relevant code (read_file, search, list_dir) before you change it.
- Make minimal, targeted edits with apply_patch: change only what the task needs, keep the
  surrounding style, and never rewrite a whole file to change a few lines.
- Never run tests, builds or other commands unless the user asked you to in their message; any
  other shell call is refused. When a command would help, say which one and why, and ask.
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

/**
 * Whether the user asked for a command or tests to be run in this message. Only then (or with
 * --allow-shell) does a shell call run; otherwise it is refused: the agent never runs anything on
 * its own initiative.
 */
export function asksToRunCommands(text: string): boolean {
  return RUN_REQUESTS.some((pattern) => pattern.test(text));
}

const RUN_REQUESTS = [
  /\b(run|rerun|re-run|execute|exec)\b/i,
  /\b(test|build|compile|lint|install)\s+(it|this|that|them|everything|the project)\b/i,
  /`[^`]*\b(npm|npx|pnpm|yarn|make|cargo|go|pytest|python3?|node|git|bash|sh)\b[^`]*`/,
];
