import { McpHub } from "../agent/mcp/mcp-hub.js";
import type { McpServerSettings } from "../agent/mcp/mcp-server-settings.js";
import type { ThreadMcpServer } from "../protocol/agent-requests.js";

export interface ThreadMcpOptions {
  /** The thread's workspace root: a stdio server's directory. */
  root: string;
  /** Names the host's own servers use: a thread's server of the same name is left out. */
  taken: readonly string[];
  /** Whether the person trusts the workspace (`spark trust`): nothing starts otherwise. */
  trusted: () => Promise<boolean>;
  /** What the person should know: servers left out, and why. */
  onNotice: (message: string) => void;
}

/**
 * The MCP servers a client brought for one thread (an editor's, over ACP), started and listing
 * their tools; null when there are none to start. They follow a project's rules: they start only
 * in a trusted workspace, and every call asks for approval.
 */
export async function startThreadMcpServers(
  servers: readonly ThreadMcpServer[],
  options: ThreadMcpOptions,
): Promise<McpHub | null> {
  if (servers.length === 0) return null;
  const names = servers.map((server) => server.name).join(", ");
  if (!(await options.trusted())) {
    options.onNotice(
      `The editor's MCP servers (${names}) are not used: this workspace is not trusted. Run spark trust in it to use them.`,
    );
    return null;
  }
  const settings: Record<string, McpServerSettings> = {};
  for (const server of servers) {
    if (options.taken.includes(server.name) || settings[server.name]) {
      options.onNotice(
        `The editor's MCP server ${server.name} is not used: a server of that name is configured.`,
      );
      continue;
    }
    settings[server.name] =
      "command" in server
        ? {
            command: server.command,
            ...(server.args ? { args: server.args } : {}),
            ...(server.env ? { env: Object.fromEntries(server.env.map((v) => [v.name, v.value])) } : {}),
            source: "project",
          }
        : {
            url: server.url,
            ...(server.headers
              ? { headers: Object.fromEntries(server.headers.map((h) => [h.name, h.value])) }
              : {}),
            source: "project",
          };
  }
  if (Object.keys(settings).length === 0) return null;
  const hub = new McpHub({ servers: settings, root: options.root, onNotice: options.onNotice });
  hub.start();
  await hub.whenStarted();
  return hub;
}
