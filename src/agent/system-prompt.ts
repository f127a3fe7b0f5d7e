import path from "node:path";
import type { AgentsFile } from "./agents-md.js";
import type { AgentDefinition } from "./definitions/agent-definitions.js";
import { type Skill, skillLine } from "./definitions/skills.js";

// Each rule is said once: here what holds for every tool, in a tool's description what holds for it.
const BASE = `You are Spark, a coding assistant in the user's repository. Be brief unless asked for more.
Read the code before changing it; change only what the task needs, in the file's style.`;

export interface SystemPromptOptions {
  /** Skills the model may load (`load_skill`): only their names and descriptions are listed. Default: none. */
  skills?: readonly Skill[];
  /** Agents `delegate` may run a task as: names and descriptions. Default: none. */
  agents?: readonly AgentDefinition[];
}

/**
 * The system prompt: Spark's rules, the repository's AGENTS.md files, and the names
 * and descriptions of the skills and defined agents (sorted by name, as discovered). Built once per
 * session and sent unchanged with every request (nothing per turn: no date, no counters), so it
 * stays part of the prefix the server keeps evaluated: the same files give the same bytes.
 */
export function buildSystemPrompt(
  workspaceRoot: string,
  agentsFiles: readonly AgentsFile[],
  options: SystemPromptOptions = {},
): string {
  // The workspace is not named: the same prompt in every workspace without AGENTS.md, skills or
  // agents is one saved KV state per machine and model, not one per workspace (the tool list comes
  // after this text in every template, so a path here would make every workspace evaluate it anew).
  const parts = [BASE, "Paths are relative to the workspace root."];
  for (const file of agentsFiles) {
    const where = path.relative(workspaceRoot, file.path) || "AGENTS.md";
    parts.push(`Instructions from ${where}:\n${file.content.trim()}`);
  }
  if (options.skills && options.skills.length > 0) {
    parts.push(
      "Skills (when the task matches one, load_skill it first; a skill grants no permission):\n" +
        options.skills.map(skillLine).join("\n"),
    );
  }
  if (options.agents && options.agents.length > 0) {
    parts.push(
      "Agents for delegate (set agent to the name):\n" +
        options.agents.map((agent) => `- ${agent.name}: ${agent.description}`).join("\n"),
    );
  }
  return parts.join("\n\n");
}
