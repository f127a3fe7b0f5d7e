import type { McpServerInfo, McpServerState } from "../../protocol/agent.js";

/**
 * One line for each server that has just turned failed or stopped (or is listed that way for the
 * first time), so the person notices without typing /mcp. `seen` holds each server's last state and
 * is updated.
 */
export function mcpServerNotices(
  seen: Map<string, McpServerState>,
  servers: readonly McpServerInfo[],
): string[] {
  const notices: string[] = [];
  for (const server of servers) {
    const before = seen.get(server.name);
    seen.set(server.name, server.state);
    if (before === server.state || (server.state !== "failed" && server.state !== "stopped")) continue;
    const why = server.error ? `: ${firstLine(server.error)}` : "";
    notices.push(`MCP server ${server.name} ${server.state}${why} (/mcp lists the servers)`);
  }
  const listed = new Set(servers.map((server) => server.name));
  for (const name of [...seen.keys()]) if (!listed.has(name)) seen.delete(name);
  return notices;
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0]!.trim();
  return line.length > 160 ? `${line.slice(0, 159)}…` : line;
}
