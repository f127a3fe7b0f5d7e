import type { McpServerList } from "../../agent/mcp/mcp-server-list.js";
import type { McpServerInfo } from "../../protocol/agent.js";

/** An McpServerList held in memory, for tests of the faces that list MCP servers. */
export class MemoryMcpServerList implements McpServerList {
  private servers: McpServerInfo[];
  private readonly listeners = new Set<() => void>();

  constructor(servers: McpServerInfo[] = []) {
    this.servers = servers;
  }

  list(): McpServerInfo[] {
    return this.servers.map((server) => ({ ...server, tools: [...server.tools] }));
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Listeners still subscribed (0 once the host is disposed). */
  get listenerCount(): number {
    return this.listeners.size;
  }

  /** Adds a server, or replaces the one of the same name; notifies. */
  set(server: McpServerInfo): void {
    const at = this.servers.findIndex((candidate) => candidate.name === server.name);
    if (at === -1) this.servers = [...this.servers, server];
    else this.servers = this.servers.map((candidate, index) => (index === at ? server : candidate));
    for (const listener of [...this.listeners]) listener();
  }

  /** Changes fields of the named server; notifies. */
  update(name: string, change: Partial<McpServerInfo>): void {
    const server = this.servers.find((candidate) => candidate.name === name);
    if (!server) throw new Error(`No MCP server ${name}`);
    this.set({ ...server, ...change });
  }
}

/** A server as the tests list it: `everything` over stdio, from the user's config, asking. */
export function mcpServer(overrides: Partial<McpServerInfo> = {}): McpServerInfo {
  return {
    name: "everything",
    state: "ready",
    transport: "stdio",
    source: "user",
    trusted: false,
    tools: ["mcp__everything__echo", "mcp__everything__get-sum"],
    ...overrides,
  };
}
