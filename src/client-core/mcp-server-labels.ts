import type { McpServerInfo, McpServerState } from "../protocol/agent.js";

/** How every face words one MCP server (the web app's panel, the editor's chat, `/mcp`). */
export interface McpServerLabels {
  /** The state badge's text. */
  state: string;
  /** What the badge says to a screen reader. */
  stateDescription: string;
  /** The tool count, the summary the tool names expand from ("" when it has none). */
  tools: string;
  /** Transport, config and approval, in one line. */
  detail: string;
  /** The failure to show, for a failed or stopped server. */
  error: string | null;
}

const STATE_WORDS: Record<McpServerState, string> = {
  starting: "starting",
  ready: "ready",
  failed: "failed",
  stopped: "stopped",
};

export function mcpServerLabels(server: McpServerInfo): McpServerLabels {
  const count = server.tools.length;
  return {
    state: STATE_WORDS[server.state],
    stateDescription: `${server.name}: ${STATE_WORDS[server.state]}`,
    tools: count === 0 ? "" : `${count} tool${count > 1 ? "s" : ""}`,
    detail: [
      server.transport,
      `${server.source} config`,
      server.trusted ? "trusted: runs without asking" : "asks before each call",
    ].join(" · "),
    error:
      (server.state === "failed" || server.state === "stopped") && server.error
        ? server.error
        : server.state === "failed"
          ? "It failed to start."
          : null,
  };
}
