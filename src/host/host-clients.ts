import { type Catalog, catalogInfo } from "../agent/definitions/catalog.js";
import type { McpServerList } from "../agent/mcp/mcp-server-list.js";
import type { HostEvent, ThreadInfo } from "../protocol/agent.js";
import { MCP_SERVERS_LIMITS } from "../protocol/mcp-servers.js";

/**
 * One client connection as the host uses it: the server side of a `ws` WebSocket, or an in-memory
 * one (the terminal's own host, see runtime/in-memory-socket.ts).
 */
export interface HostSocket {
  readonly readyState: number;
  readonly OPEN: number;
  /** Bytes sent but not yet written to the network (a `ws` socket's); absent: never backed up. */
  readonly bufferedAmount?: number;
  send(line: string): void;
  /** Closes the connection with a close code (a `ws` socket's); needed with `bufferedAmount`. */
  close?(code: number, reason: string): void;
  on(event: "message", listener: (data: Buffer, isBinary: boolean) => void): unknown;
  on(event: "close", listener: () => void): unknown;
  on(event: "error", listener: (error: Error) => void): unknown;
}

/**
 * The close code of a client that did not read its events fast enough (see `clientBufferBytes`).
 * In the private-use range (4000-4999) of RFC 6455; a client reconnects and resumes its threads.
 */
export const SLOW_CLIENT_CLOSE_CODE = 4008;

/**
 * Changes of the MCP server list within this long go out as one `mcp.servers` (servers starting
 * together change state in separate callbacks).
 */
const MCP_COALESCE_MS = 10;

export interface HostClientsOptions {
  /** Bytes a client may leave unread before it is closed (see AgentHostOptions.clientBufferBytes). */
  clientBufferBytes: number;
  /** The agent's MCP servers, listed to every client (see AgentHostOptions.mcp). */
  mcp?: McpServerList | undefined;
}

/**
 * The host's connected clients and what every one of them is told, whatever threads it follows:
 * the MCP server list, the catalog, and sessions as they appear. Sends within each client's byte
 * budget.
 */
export class HostClients {
  private readonly clients = new Set<HostSocket>();
  /** The workspace each client last listed (`thread.list {workspace}`); later lists keep to it. */
  private readonly listWorkspaces = new WeakMap<HostSocket, string | undefined>();
  private readonly stopMcp: () => void;
  /** A coalesced `mcp.servers` is due (unref'd: it never keeps the process alive). */
  private mcpTimer: ReturnType<typeof setTimeout> | null = null;
  /** The `catalog` line each client gets on connecting; null: nothing to list. */
  private catalogLine: string | null = null;
  /** The `models` line each client gets on connecting; null: none to offer. */
  private modelsLine: string | null = null;
  /** The `prompt.progress` line each client gets on connecting; null once the evaluation is over. */
  private promptLine: string | null = null;

  constructor(private readonly options: HostClientsOptions) {
    this.stopMcp = options.mcp?.onChange(() => this.scheduleMcpServers()) ?? (() => {});
  }

  /** A client connected: it gets the MCP servers and the catalog now, and what every client gets from now on. */
  add(socket: HostSocket): void {
    this.clients.add(socket);
    if (this.options.mcp) this.send(socket, this.mcpServersLine(this.options.mcp));
    if (this.catalogLine) this.send(socket, this.catalogLine);
    if (this.modelsLine) this.send(socket, this.modelsLine);
    if (this.promptLine) this.send(socket, this.promptLine);
  }

  /** Tells every client how far the agent prompt's evaluation is (and each new one, until it ends). */
  showPromptProgress(progress: { evaluated: number; total: number; done: boolean }): void {
    const line = JSON.stringify({
      type: "prompt.progress",
      evaluated_tokens: progress.evaluated,
      total_tokens: progress.total,
      done: progress.done,
    } satisfies HostEvent);
    this.promptLine = progress.done ? null : line;
    for (const socket of this.clients) this.send(socket, line);
  }

  delete(socket: HostSocket): void {
    this.clients.delete(socket);
  }

  /** Lists `catalog` to every client, now and on connecting. */
  listCatalog(catalog: Catalog): void {
    if (catalog.skills.length === 0 && catalog.agents.length === 0) return;
    this.catalogLine = JSON.stringify({ type: "catalog", ...catalogInfo(catalog) } satisfies HostEvent);
    for (const socket of this.clients) this.send(socket, this.catalogLine);
  }

  /** Lists the models threads may switch to, to every client now and on connecting. */
  listModels(models: readonly string[]): void {
    if (models.length === 0) return;
    this.modelsLine = JSON.stringify({ type: "models", models: [...models] } satisfies HostEvent);
    for (const socket of this.clients) this.send(socket, this.modelsLine);
  }

  /** The workspace `socket` last listed (undefined: all of them). */
  listWorkspace(socket: HostSocket): string | undefined {
    return this.listWorkspaces.get(socket);
  }

  setListWorkspace(socket: HostSocket, workspace: string | undefined): void {
    this.listWorkspaces.set(socket, workspace);
  }

  /**
   * A listed session is new or changed: every client gets its entry alone (`thread.listed`), unless
   * it last listed another workspace.
   */
  announceSession(info: ThreadInfo): void {
    const line = JSON.stringify({ type: "thread.listed", thread: info } satisfies HostEvent);
    for (const socket of this.clients) {
      const workspace = this.listWorkspaces.get(socket);
      if (workspace === undefined || workspace === info.cwd) this.send(socket, line);
    }
  }

  /**
   * Sends one line, unless the client still has more than its budget unread from before: then it
   * is closed (its memory here is freed once the close goes through, or ws gives up on it) and
   * sent nothing more. A single event larger than the budget still reaches a client that keeps up,
   * and so does a replay (`budgeted: false`), bounded by `replayBytes` instead.
   */
  send(socket: HostSocket, line: string, budgeted = true): void {
    if (socket.readyState !== socket.OPEN) return;
    if (budgeted && (socket.bufferedAmount ?? 0) > this.options.clientBufferBytes && socket.close) {
      socket.close(SLOW_CLIENT_CLOSE_CODE, "too slow: events were not read");
      return;
    }
    socket.send(line);
  }

  /** Stops listening to the MCP servers. Idempotent. */
  dispose(): void {
    this.stopMcp();
    if (this.mcpTimer) clearTimeout(this.mcpTimer);
    this.mcpTimer = null;
  }

  private scheduleMcpServers(): void {
    if (this.mcpTimer) return;
    this.mcpTimer = setTimeout(() => {
      this.mcpTimer = null;
      if (!this.options.mcp) return;
      const line = this.mcpServersLine(this.options.mcp);
      for (const socket of this.clients) this.send(socket, line);
    }, MCP_COALESCE_MS);
    this.mcpTimer.unref();
  }

  /** The list as it is now; an error text past the wire's bound is shortened, not dropped. */
  private mcpServersLine(mcp: McpServerList): string {
    const max = MCP_SERVERS_LIMITS.errorChars;
    const servers = mcp
      .list()
      .map((server) =>
        server.error !== undefined && server.error.length > max
          ? { ...server, error: `${server.error.slice(0, max - 1)}…` }
          : server,
      );
    return JSON.stringify({ type: "mcp.servers", servers } satisfies HostEvent);
  }
}
