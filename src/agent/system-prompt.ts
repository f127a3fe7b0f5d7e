import path from "node:path";
import type { AgentsFile } from "./agents-md.js";
import type { AgentDefinition } from "./definitions/agent-definitions.js";
import { type Skill, skillLine } from "./definitions/skills.js";

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

export interface SystemPromptOptions {
  /** Skills the model may load (`load_skill`): only their names and descriptions are listed. Default: none. */
  skills?: readonly Skill[];
  /** Agents `delegate` may run a task as: names and descriptions. Default: none. */
  agents?: readonly AgentDefinition[];
}

/**
 * The system prompt: Spark's rules, the workspace, the repository's AGENTS.md files, and the names
 * and descriptions of the skills and defined agents (sorted by name, as discovered). Built once per
 * session and sent unchanged with every request (nothing per turn: no date, no counters), so it
 * stays part of the prefix the server keeps evaluated: the same files give the same bytes.
 */
export function buildSystemPrompt(
  workspaceRoot: string,
  agentsFiles: readonly AgentsFile[],
  options: SystemPromptOptions = {},
): string {
  const parts = [BASE, `Workspace: ${workspaceRoot}`];
  for (const file of agentsFiles) {
    const where = path.relative(workspaceRoot, file.path) || "AGENTS.md";
    parts.push(`Instructions from ${where}:\n${file.content.trim()}`);
  }
  if (options.skills && options.skills.length > 0) {
    parts.push(
      "Skills: instructions for particular tasks, written by the user or the repository. When a " +
        "task matches a skill's description, load it with load_skill before you start. A skill " +
        "gives you no permission the user did not give.\n" +
        options.skills.map(skillLine).join("\n"),
    );
  }
  if (options.agents && options.agents.length > 0) {
    parts.push(
      "Agents you can hand a task to (delegate with agent set to the name):\n" +
        options.agents.map((agent) => `- ${agent.name}: ${agent.description}`).join("\n"),
    );
  }
  return parts.join("\n\n");
}
