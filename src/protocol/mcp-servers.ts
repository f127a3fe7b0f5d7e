import type { McpServerInfo, McpServerState } from "./agent.js";

/**
 * Bounds of an `mcp.servers` event. A client rejects an event past any of them whole (it keeps the
 * list it had); the host shortens a longer `error` text before sending, so its own never exceed it.
 */
export const MCP_SERVERS_LIMITS = {
  servers: 256,
  /** Characters of a server's name. */
  nameChars: 128,
  toolsPerServer: 1024,
  /** Characters of a tool's model-facing name (`mcp__SERVER__TOOL`). */
  toolNameChars: 512,
  /** Characters of a failed or stopped server's `error`. */
  errorChars: 4096,
} as const;

const STATES: readonly McpServerState[] = ["starting", "ready", "failed", "stopped"];
const TRANSPORTS: readonly McpServerInfo["transport"][] = ["stdio", "http"];
const SOURCES: readonly McpServerInfo["source"][] = ["user", "project"];

export type DecodedMcpServers = { ok: true; servers: McpServerInfo[] } | { ok: false; reason: string };

/**
 * Checks the `servers` of an `mcp.servers` event from a host (untrusted: any JSON) against
 * {@link McpServerInfo} and {@link MCP_SERVERS_LIMITS}; returns copies holding only the known fields,
 * or why it does not match. Hand-written rather than a zod schema: it runs in the browser and the
 * editor's webview, whose bundles carry no schema library.
 */
export function decodeMcpServers(value: unknown): DecodedMcpServers {
  if (!Array.isArray(value)) return invalid("servers", "is not an array");
  if (value.length > MCP_SERVERS_LIMITS.servers)
    return invalid("servers", `lists more than ${MCP_SERVERS_LIMITS.servers} servers`);
  const servers: McpServerInfo[] = [];
  const names = new Set<string>();
  for (const [index, raw] of value.entries()) {
    const at = `servers[${index}]`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return invalid(at, "is not an object");
    const entry = raw as Record<string, unknown>;
    const { name, state, transport, source, trusted, tools, error } = entry;
    if (!isText(name, MCP_SERVERS_LIMITS.nameChars) || name === "")
      return invalid(`${at}.name`, `is not a name of 1-${MCP_SERVERS_LIMITS.nameChars} characters`);
    if (names.has(name)) return invalid(`${at}.name`, `repeats the server ${JSON.stringify(name)}`);
    names.add(name);
    if (!oneOf(STATES, state)) return invalid(`${at}.state`, `is not one of ${STATES.join(", ")}`);
    if (!oneOf(TRANSPORTS, transport))
      return invalid(`${at}.transport`, `is not one of ${TRANSPORTS.join(", ")}`);
    if (!oneOf(SOURCES, source)) return invalid(`${at}.source`, `is not one of ${SOURCES.join(", ")}`);
    if (typeof trusted !== "boolean") return invalid(`${at}.trusted`, "is not a boolean");
    if (!Array.isArray(tools)) return invalid(`${at}.tools`, "is not an array");
    if (tools.length > MCP_SERVERS_LIMITS.toolsPerServer)
      return invalid(`${at}.tools`, `lists more than ${MCP_SERVERS_LIMITS.toolsPerServer} tools`);
    const toolNames: string[] = [];
    for (const [toolIndex, tool] of tools.entries()) {
      if (!isText(tool, MCP_SERVERS_LIMITS.toolNameChars) || tool === "")
        return invalid(
          `${at}.tools[${toolIndex}]`,
          `is not a name of 1-${MCP_SERVERS_LIMITS.toolNameChars} characters`,
        );
      toolNames.push(tool);
    }
    if (error !== undefined && !isText(error, MCP_SERVERS_LIMITS.errorChars))
      return invalid(`${at}.error`, `is not a text of at most ${MCP_SERVERS_LIMITS.errorChars} characters`);
    servers.push({
      name,
      state,
      transport,
      source,
      trusted,
      tools: toolNames,
      ...(error === undefined ? {} : { error }),
    });
  }
  return { ok: true, servers };
}

function isText(value: unknown, maxChars: number): value is string {
  return typeof value === "string" && value.length <= maxChars;
}

function oneOf<T extends string>(allowed: readonly T[], value: unknown): value is T {
  return typeof value === "string" && (allowed as readonly string[]).includes(value);
}

function invalid(param: string, problem: string): DecodedMcpServers {
  return { ok: false, reason: `${param} ${problem}` };
}
