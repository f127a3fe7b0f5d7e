import type { McpServerInfo } from "../../protocol/agent.js";
import type { Tool } from "../tools/tool.js";
import { McpConnection } from "./mcp-connection.js";
import type { McpServerList } from "./mcp-server-list.js";
import type { McpServerSettings } from "./mcp-server-settings.js";
import { mcpTool } from "./mcp-tool.js";

export interface McpHubOptions {
  /** The servers by name (config's `mcpServers`); disabled ones are not started or listed. */
  servers: Record<string, McpServerSettings>;
  /** The workspace root: a stdio server's default directory. */
  root: string;
  /** Where `bearer_token_env` is read. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** A line for the person and the log: a server failed or stopped, a tool was skipped. */
  onNotice?: (message: string) => void;
}

/**
 * The MCP servers of one workspace. {@link start} starts every enabled server in the background
 * (nothing waits for it); {@link tools} is what the ready ones offer right now, as agent tools.
 * {@link dispose} closes every client and ends every server process.
 */
export class McpHub implements McpServerList, AsyncDisposable {
  private readonly connections: McpConnection[];
  private readonly listeners = new Set<() => void>();

  constructor(options: McpHubOptions) {
    this.connections = Object.entries(options.servers)
      .filter(([, config]) => config.enabled !== false)
      .map(
        ([name, config]) =>
          new McpConnection({
            name,
            config,
            root: options.root,
            env: options.env ?? process.env,
            onChange: () => this.changed(),
            onNotice: options.onNotice ?? (() => {}),
          }),
      );
  }

  /** Starts every server; returns at once. */
  start(): void {
    for (const connection of this.connections) void connection.start();
  }

  /** Resolves when no server is starting (each is ready or failed); for `spark exec` and tests. */
  async whenStarted(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.whenStarted()));
  }

  /** The tools of the servers ready now, server by server in config order. */
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
  tools(): Tool<any>[] {
    return this.connections.flatMap((connection) =>
      connection.listedTools.map((listed) => mcpTool(connection, listed)),
    );
  }

  /** A server by name (tests reach its process). */
  server(name: string): McpConnection | undefined {
    return this.connections.find((connection) => connection.name === name);
  }

  list(): McpServerInfo[] {
    return this.connections.map((connection) => connection.info());
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async dispose(): Promise<void> {
    await Promise.all(this.connections.map((connection) => connection.close()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}
