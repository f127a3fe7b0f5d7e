import type {
  AvailableCommand,
  McpServer,
  SessionConfigOption,
  SessionModeState,
} from "@agentclientprotocol/sdk";
import { AGENT_MODES, type AgentMode, type ThreadInfo } from "../../protocol/agent.js";
import type { ThreadMcpServer } from "../../protocol/agent-requests.js";

export const MODES: SessionModeState["availableModes"] = [
  { id: "default", name: "Default", description: "Every tool; edits apply, commands run after approval." },
  {
    id: "plan",
    name: "Plan",
    description: "Read-only tools only: the answer is a plan; switch to Default to implement it.",
  },
];

/** The session's config options: its mode, and its model among those the agent host offers. */
export function configOptions(info: ThreadInfo, models: readonly string[]): SessionConfigOption[] {
  const current = info.model;
  const offered = models.includes(current) || !current ? models : [current, ...models];
  return [
    {
      id: "mode",
      name: "Mode",
      category: "mode",
      type: "select",
      currentValue: info.mode ?? "default",
      options: MODES.map((mode) => ({ value: mode.id, name: mode.name, description: mode.description })),
    },
    {
      id: "model",
      name: "Model",
      category: "model",
      description:
        offered.length > 1 ? "The model of the following turns." : "The only model this agent serves.",
      type: "select",
      currentValue: current,
      options: offered.map((name) => ({ value: name, name })),
    },
  ];
}

/** Slash commands an ACP client offers; each runs between turns, without the model. */
export const ACP_COMMANDS: AvailableCommand[] = [
  { name: "mode", description: "Switch mode: default or plan", input: { hint: "default | plan" } },
  {
    name: "model",
    description: "Show the model, or switch the following turns to another",
    input: { hint: "name" },
  },
  { name: "undo", description: "Revert the last patch the agent applied" },
  {
    name: "compact",
    description: "Summarise older turns to free context, keeping the focus in view",
    input: { hint: "focus" },
  },
  {
    name: "review",
    description:
      "Review the uncommitted changes (or a branch's, a commit's), read-only: findings by file and line",
    input: { hint: "--base BRANCH | --commit SHA" },
  },
];

export type AcpCommand =
  | { name: "mode"; mode: AgentMode | null; arg: string }
  | { name: "model"; model: string }
  | { name: "undo" }
  | { name: "compact"; focus: string }
  | { name: "review"; args: string };

/**
 * A prompt that is one of {@link ACP_COMMANDS} (`/name args`), or null: any other text, an
 * unknown command included, is a turn for the model.
 */
export function parseAcpCommand(input: string): AcpCommand | null {
  const match = /^\/([a-z]+)(?:\s+([\s\S]*))?$/.exec(input.trim());
  if (!match) return null;
  const arg = (match[2] ?? "").trim();
  switch (match[1]) {
    case "mode": {
      const mode = (AGENT_MODES as readonly string[]).includes(arg) ? (arg as AgentMode) : null;
      return { name: "mode", mode, arg };
    }
    case "model":
      return { name: "model", model: arg };
    case "undo":
      return arg ? null : { name: "undo" };
    case "compact":
      return { name: "compact", focus: arg };
    case "review":
      return { name: "review", args: arg };
    default:
      return null;
  }
}

/**
 * The editor's MCP servers (`session/new`'s `mcpServers`) as the agent host takes them: names made
 * config-safe (lowercase letters, digits, - and _, at most 24, unique), stdio and HTTP servers;
 * SSE servers (deprecated by MCP) are left out and named in `skipped`.
 */
export function editorMcpServers(servers: readonly McpServer[]): {
  servers: ThreadMcpServer[];
  skipped: string[];
} {
  const used = new Set<string>();
  const out: ThreadMcpServer[] = [];
  const skipped: string[] = [];
  for (const server of servers) {
    if ("type" in server && server.type === "sse") {
      skipped.push(server.name);
      continue;
    }
    const base =
      server.name
        .toLowerCase()
        .replace(/[^a-z0-9_-]+/g, "-")
        .replace(/^[-_]+/, "")
        .slice(0, 24) || "editor";
    let name = base;
    for (let n = 2; used.has(name); n++) name = `${base.slice(0, 24 - String(n).length - 1)}-${n}`;
    used.add(name);
    if ("type" in server && server.type === "http")
      out.push({ name, url: server.url, ...(server.headers.length ? { headers: server.headers } : {}) });
    else if ("command" in server)
      out.push({
        name,
        command: server.command,
        ...(server.args.length ? { args: server.args } : {}),
        ...(server.env.length ? { env: server.env } : {}),
      });
  }
  return { servers: out, skipped };
}
