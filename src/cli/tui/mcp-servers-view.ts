import os from "node:os";
import { Box, Text } from "ink";
import React from "react";
import { mcpServerLabels } from "../../client-core/mcp-server-labels.js";
import { userConfigPath } from "../../config/spark-config.js";
import type { McpServerInfo, McpServerState } from "../../protocol/agent.js";

const h = React.createElement;

const STATE_COLOR: Record<McpServerState, string> = {
  ready: "green",
  starting: "yellow",
  failed: "red",
  stopped: "red",
};

/** What `/mcp` prints: each server with its state, transport, config, approval, tools and error. */
export function McpServersView({ servers }: { servers: readonly McpServerInfo[] }): React.ReactElement {
  if (servers.length === 0) {
    return h(
      Box,
      { marginTop: 1 },
      h(Text, null, `No MCP servers configured — add [mcp_servers.NAME] to ${configPathForPeople()}`),
    );
  }
  return h(
    Box,
    { flexDirection: "column", marginTop: 1 },
    h(
      Text,
      { bold: true },
      `MCP servers (${servers.length}); their tools reach the model as mcp__SERVER__TOOL`,
    ),
    servers.map((server) => h(McpServerRow, { key: server.name, server })),
  );
}

function McpServerRow({ server }: { server: McpServerInfo }): React.ReactElement {
  const labels = mcpServerLabels(server);
  const tools = server.tools.map((tool) => shortToolName(server.name, tool));
  return h(
    Box,
    { flexDirection: "column" },
    h(
      Text,
      null,
      h(Text, { color: STATE_COLOR[server.state] }, "● "),
      h(Text, { bold: true }, server.name),
      " ",
      h(Text, { color: STATE_COLOR[server.state], bold: true }, labels.state),
      h(Text, { dimColor: true }, `  ${labels.detail}`),
    ),
    labels.error ? h(Box, { paddingLeft: 4 }, h(Text, { color: "red" }, labels.error)) : null,
    labels.tools
      ? h(Box, { paddingLeft: 4 }, h(Text, null, `${labels.tools}: ${tools.join(", ")}`))
      : server.state === "ready"
        ? h(Box, { paddingLeft: 4 }, h(Text, { dimColor: true }, "no tools"))
        : null,
  );
}

/** `echo` for `mcp__everything__echo` of server `everything`; other names as they are. */
function shortToolName(server: string, tool: string): string {
  const prefix = `mcp__${server}__`;
  return tool.startsWith(prefix) && tool.length > prefix.length ? tool.slice(prefix.length) : tool;
}

/** The user's config file, with the home folder as `~`. */
function configPathForPeople(): string {
  const file = userConfigPath();
  const home = os.homedir();
  return file.startsWith(`${home}/`) ? `~${file.slice(home.length)}` : file;
}
