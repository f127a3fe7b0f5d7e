import path from "node:path";
import { readBounded } from "../tools/internal/bounded-read.js";
import type { Tool } from "../tools/tool.js";
import { ToolError } from "../tools/tool-error.js";
import { codeOf, type DefinitionPlaces, type DefinitionSource, folderEntries } from "./definition-places.js";
import { oneLine, parseFrontmatter } from "./frontmatter.js";
import { SKILL_NAME } from "./skills.js";

/** An agent a person (or the repository) defined: the `delegate` tool can run a sub-agent as it. */
export interface AgentDefinition {
  name: string;
  description: string;
  source: DefinitionSource;
  /** Its file as the person is told of it. */
  file: string;
  /** The sub-agent's own instructions (the file's body). */
  instructions: string;
  /** The tools it may use; absent: every tool its parent thread offers (but `delegate`). */
  tools?: string[];
  /** The tier it runs on (`tier`, or `model` as other agents spell it); absent: the delegate tier. */
  tier?: string;
}

/** Bytes of an agent file at most; a larger one is reported and not used. */
export const AGENT_FILE_MAX_BYTES = 32 * 1024;
export const AGENT_DESCRIPTION_MAX_CHARS = 1024;
/** Agents listed to the model at most (by name); more are reported and left out. */
export const MAX_AGENTS = 64;
/** Tool names one agent lists at most. */
const MAX_AGENT_TOOLS = 64;
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const TIER_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The frontmatter an agent file may have. Anything else is refused with the file, not ignored: an
 * agent cannot set approvals, a permission mode or a sandbox (Claude Code's `permissionMode`, for
 * one): those are the person's, whoever wrote the agent. `color` (a UI hint other agents write) is
 * accepted and unused.
 */
const FIELDS = new Set(["name", "description", "tools", "tier", "model", "color"]);

/**
 * The agents of the person's config folder (`agents/NAME.md`) and of the repository's
 * `.agents/agents/`: Markdown files whose frontmatter gives `name`, `description`, and optionally
 * `tools` (a list, or names separated by commas) and `tier` (or `model`); the body is the
 * sub-agent's instructions. Sorted by name; the person's agent wins over the repository's of the
 * same name. Invalid files are reported in `problems` and left out.
 */
export async function discoverAgents(
  places: DefinitionPlaces,
  problems: string[],
): Promise<AgentDefinition[]> {
  const byName = new Map<string, AgentDefinition>();
  for (const entry of await folderEntries(places, "agents", problems)) {
    if (!entry.name.endsWith(".md")) continue;
    const agent = await readAgent(entry.real, entry.shown, entry.source);
    if ("problem" in agent) {
      problems.push(`${entry.shown} is not used: ${agent.problem}.`);
      continue;
    }
    const held = byName.get(agent.name);
    if (held) {
      problems.push(`${entry.shown} is not used: ${held.file} defines the agent '${agent.name}' already.`);
      continue;
    }
    byName.set(agent.name, agent);
  }
  const sorted = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const dropped of sorted.slice(MAX_AGENTS))
    problems.push(`${dropped.file} is not used: more than ${MAX_AGENTS} agents are defined.`);
  return sorted.slice(0, MAX_AGENTS);
}

async function readAgent(
  real: string,
  file: string,
  source: DefinitionSource,
): Promise<AgentDefinition | { problem: string }> {
  let read: Awaited<ReturnType<typeof readBounded>>;
  try {
    read = await readBounded(real, AGENT_FILE_MAX_BYTES);
  } catch (error) {
    return { problem: `it was not read (${codeOf(error)})` };
  }
  if (read.kind === "not_file") return { problem: "it is not a regular file" };
  if (read.kind === "too_large")
    return { problem: `it is ${read.size} bytes, more than ${AGENT_FILE_MAX_BYTES}` };
  const parsed = parseFrontmatter(read.content.toString("utf8"));
  if ("problem" in parsed) return parsed;
  const { fields, body } = parsed;
  const unknown = Object.keys(fields).find((key) => !FIELDS.has(key));
  if (unknown !== undefined)
    return {
      problem:
        `its frontmatter sets '${unknown}'; an agent file has name, description, tools and tier ` +
        "(or model): approvals and the sandbox are the person's settings",
    };
  const { name, description, tools, tier, model } = fields;
  if (typeof name !== "string" || !SKILL_NAME.test(name))
    return { problem: "its name is not 1-64 lowercase letters, digits and single hyphens" };
  const oneLineDescription = oneLine(description, AGENT_DESCRIPTION_MAX_CHARS);
  if (oneLineDescription === null)
    return { problem: `its description is not a text of 1-${AGENT_DESCRIPTION_MAX_CHARS} characters` };
  if (tier !== undefined && model !== undefined) return { problem: "it sets both tier and model" };
  const chosen = tier ?? model;
  if (chosen !== undefined && (typeof chosen !== "string" || !TIER_NAME.test(chosen)))
    return { problem: "its tier is not a name of 1-64 letters, digits, '_', '.' or '-'" };
  const toolNames = tools === undefined ? undefined : toolList(tools);
  if (toolNames === null)
    return {
      problem: `its tools are not a list of at most ${MAX_AGENT_TOOLS} tool names (or names separated by commas)`,
    };
  if (toolNames?.includes("delegate"))
    return { problem: "it lists delegate: sub-agents start no sub-agents" };
  const instructions = body.trim();
  if (instructions === "") return { problem: "it has no instructions after its frontmatter" };
  return {
    name,
    description: oneLineDescription,
    source,
    file,
    instructions,
    ...(toolNames ? { tools: toolNames } : {}),
    ...(chosen !== undefined ? { tier: chosen as string } : {}),
  };
}

function toolList(value: unknown): string[] | null {
  const raw = typeof value === "string" ? value.split(",").map((name) => name.trim()) : value;
  if (!Array.isArray(raw) || raw.length > MAX_AGENT_TOOLS) return null;
  const names: string[] = [];
  for (const name of raw) {
    if (typeof name !== "string" || !TOOL_NAME.test(name)) return null;
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

/** What a defined agent runs with once {@link agentRun} allowed it. */
export interface AgentRun {
  /** The model (tier) its thread runs on. */
  model: string;
  /** Its system prompt: the thread's own, then the agent's instructions. */
  instructions: string;
  /** The names of the tools its thread offers: a subset of its parent's. */
  tools: string[];
}

export interface AgentRunOptions {
  /** The parent thread's system prompt. */
  instructions: string;
  /** The tools the parent thread offers: an agent never gets one beyond them. */
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
  parentTools: readonly Tool<any>[];
  /** The delegate tier: an agent without a tier runs there. */
  delegateModel: string;
  /** The tiers the session has; empty with a remote server (its models are its own). */
  tiers: readonly string[];
}

/**
 * How `agent` runs, under the one rule every agent follows, whoever wrote it: it gets the tools
 * it lists that its parent offers (never `delegate`), never one more; its commands ask the person
 * exactly as the parent's do (approvals and the sandbox are not an agent's to set); and it runs on
 * a tier of the session. With a remote server (no tiers), only the person's own agent may name a
 * model: a repository's would choose where its work is sent. Throws a ToolError for the model when
 * the agent cannot run.
 */
export function agentRun(agent: AgentDefinition, options: AgentRunOptions): AgentRun {
  let model = options.delegateModel;
  if (agent.tier !== undefined) {
    const allowed =
      options.tiers.includes(agent.tier) || (options.tiers.length === 0 && agent.source === "user");
    if (!allowed)
      throw new ToolError(
        "not_allowed",
        options.tiers.length === 0
          ? `The agent '${agent.name}' (${agent.file}) names the model '${agent.tier}', and a ` +
              "repository's agent may not choose the model. Delegate without agent, or ask the person."
          : `The agent '${agent.name}' (${agent.file}) runs on the tier '${agent.tier}', which this ` +
              `session does not have (its tiers: ${options.tiers.join(", ")}). Delegate without agent, or ` +
              "ask the person.",
      );
    model = agent.tier;
  }
  const offered = options.parentTools.map((tool) => tool.name).filter((name) => name !== "delegate");
  const tools = agent.tools ? offered.filter((name) => agent.tools!.includes(name)) : offered;
  const where = agent.source === "project" ? agent.file : path.basename(agent.file);
  return {
    model,
    instructions:
      `${options.instructions}\n\nYou are the agent '${agent.name}', started by another agent ` +
      `with a task. Instructions from ${where}:\n${agent.instructions}`,
    tools,
  };
}

/** How the agent named `name` among `agents` runs (see agentRun); a ToolError for the model when none has that name. */
export function namedAgentRun(
  agents: readonly AgentDefinition[],
  name: string,
  options: AgentRunOptions,
): AgentRun {
  const agent = agents.find((candidate) => candidate.name === name);
  if (!agent) {
    const names = agents.map((candidate) => candidate.name);
    throw new ToolError(
      "not_found",
      names.length === 0
        ? `No agent '${name}': none is defined. Delegate without an agent.`
        : `No agent '${name}'. The agents: ${names.join(", ")}.`,
    );
  }
  return agentRun(agent, options);
}
