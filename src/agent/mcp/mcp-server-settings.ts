/** Defaults of a server's timeouts, in milliseconds. */
export const MCP_STARTUP_TIMEOUT_MS = 30_000;
export const MCP_TOOL_TIMEOUT_MS = 120_000;

/**
 * One MCP server as config.toml declares it (`[mcp_servers.NAME]`, validated there): a stdio
 * server (`command`) or a streamable HTTP one (`url`).
 */
export interface McpServerSettings {
  command?: string;
  args?: string[];
  /** Added to the SDK's short safe environment (PATH, HOME, USER...). */
  env?: Record<string, string>;
  /** Relative to the workspace root. Default: the root. */
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  /** The environment variable holding a bearer token. */
  bearer_token_env?: string;
  /** Its calls run without asking. Default: false. */
  trusted?: boolean;
  /** Default: true. */
  enabled?: boolean;
  /** Default: {@link MCP_STARTUP_TIMEOUT_MS}. */
  startup_timeout_ms?: number;
  /** Default: {@link MCP_TOOL_TIMEOUT_MS}. */
  tool_timeout_ms?: number;
  /** Which config declared it. */
  source: "user" | "project";
}
