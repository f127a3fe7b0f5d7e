import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerInfo, McpServerState } from "../../protocol/agent.js";
import { OutputCapture } from "../tools/internal/output-capture.js";
import { ToolError } from "../tools/tool-error.js";
import { mcpResultText } from "./mcp-result.js";
import {
  MCP_STARTUP_TIMEOUT_MS,
  MCP_TOOL_TIMEOUT_MS,
  type McpServerSettings,
} from "./mcp-server-settings.js";
import { mcpToolName } from "./mcp-tool-name.js";

/** Bytes of a stdio server's stderr kept for the error text (head and tail). */
const STDERR_KEEP_BYTES = 4 * 1024;
/** Bounds on what a server lists: past them a tool is skipped, with a notice. */
const MAX_TOOLS = 128;
const MAX_DESCRIPTION_CHARS = 2048;
const MAX_SCHEMA_BYTES = 16 * 1024;

/** A tool a ready server listed, as the model will see it. */
export interface McpListedTool {
  /** `mcp__SERVER__TOOL`. */
  name: string;
  /** Its name on the server. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

export interface McpConnectionOptions {
  name: string;
  config: McpServerSettings;
  /** The workspace root: a stdio server's default (and relative `cwd`'s) directory. */
  root: string;
  /** Where `bearer_token_env` is read. */
  env: NodeJS.ProcessEnv;
  /** After any change of state or tools. */
  onChange: () => void;
  /** A line for the person (and the log): a skipped tool, a failure. */
  onNotice: (message: string) => void;
}

/**
 * One MCP server: started in the background by {@link start}, `starting` → `ready` (tools listed)
 * | `failed` (why) | `stopped` (died or closed: why). Calls wait for a starting server.
 */
export class McpConnection {
  private state: McpServerState = "starting";
  private error: string | undefined;
  private tools: McpListedTool[] = [];
  private client: Client | null = null;
  private transport: StdioClientTransport | StreamableHTTPClientTransport | null = null;
  private readonly stderr = new OutputCapture(STDERR_KEEP_BYTES);
  private readonly closing = new AbortController();
  private started: Promise<void> = Promise.resolve();

  constructor(private readonly options: McpConnectionOptions) {}

  get name(): string {
    return this.options.name;
  }

  get trusted(): boolean {
    return this.options.config.trusted === true;
  }

  /** The child process of a stdio server while it runs (tests kill it). */
  get pid(): number | null {
    return this.transport instanceof StdioClientTransport ? this.transport.pid : null;
  }

  get listedTools(): readonly McpListedTool[] {
    return this.state === "ready" ? this.tools : [];
  }

  info(): McpServerInfo {
    return {
      name: this.options.name,
      state: this.state,
      transport: this.options.config.url !== undefined ? "http" : "stdio",
      source: this.options.config.source,
      trusted: this.trusted,
      tools: this.tools.map((tool) => tool.name),
      ...(this.error !== undefined ? { error: this.error } : {}),
    };
  }

  /** Starts the server; the returned promise settles when it is ready or failed, and never rejects. */
  start(): Promise<void> {
    this.started = this.connect().catch((error: unknown) => {
      if (this.state === "starting") this.settle("failed", this.reason(error));
    });
    return this.started;
  }

  /** Resolves once the server is no longer starting. */
  whenStarted(): Promise<void> {
    return this.started;
  }

  /**
   * Calls one of its tools. Waits for a starting server (up to its startup timeout); throws a
   * ToolError the model can act on when the server is not running or dies during the call.
   */
  async call(
    tool: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<{ output: string; isError: boolean }> {
    await this.started;
    const client = this.client;
    if (this.state !== "ready" || !client) throw this.unavailable();
    try {
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal,
        timeout: this.options.config.tool_timeout_ms ?? MCP_TOOL_TIMEOUT_MS,
      });
      return { output: mcpResultText(result as { content?: unknown }), isError: result.isError === true };
    } catch (error) {
      if (this.state !== "ready") throw this.unavailable();
      if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
        throw new ToolError(
          "timeout",
          `${this.options.name} · ${tool} did not answer within ${this.options.config.tool_timeout_ms ?? MCP_TOOL_TIMEOUT_MS} ms.`,
        );
      }
      if (error instanceof McpError) {
        throw new ToolError("failed", `${this.options.name} · ${tool} failed: ${error.message}`);
      }
      // Not an answer of the server's: the connection itself broke (an HTTP server went away).
      this.settle("stopped", `the connection failed: ${messageOf(error)}`);
      throw this.unavailable();
    }
  }

  /** Closes the client and ends a stdio server's process. Idempotent. */
  async close(): Promise<void> {
    if (this.closing.signal.aborted) return;
    this.closing.abort();
    // Closed on purpose: the state says so, with no notice to the person.
    if (this.state === "starting" || this.state === "ready")
      this.settle("stopped", "Spark closed it", { quiet: true });
    await this.client?.close().catch(() => {});
    await this.transport?.close().catch(() => {});
  }

  private async connect(): Promise<void> {
    const { config } = this.options;
    const timeout = config.startup_timeout_ms ?? MCP_STARTUP_TIMEOUT_MS;
    const signal = AbortSignal.any([this.closing.signal, AbortSignal.timeout(timeout)]);
    const transport = this.createTransport();
    this.transport = transport;
    const client = new Client({ name: "spark", version: "1" });
    client.onclose = () => {
      if (this.state === "ready") this.settle("stopped", this.withStderr("the server exited"));
    };
    this.client = client;
    const abort = new Promise<never>((_, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
    // connect() waits on a spawn or a fetch the request options do not reach: race the signal.
    await Promise.race([client.connect(transport, { signal, timeout }), abort]);
    const tools: McpListedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout });
      for (const listed of page.tools) {
        const tool = this.modelTool(listed);
        if (tool && tools.length < MAX_TOOLS) tools.push(tool);
        else if (tool)
          this.options.onNotice(
            `MCP server ${this.options.name}: more than ${MAX_TOOLS} tools; ${listed.name} skipped.`,
          );
      }
      cursor = page.nextCursor;
    } while (cursor && tools.length < MAX_TOOLS);
    if (this.state !== "starting") return;
    this.tools = tools;
    this.settle("ready");
  }

  private createTransport(): StdioClientTransport | StreamableHTTPClientTransport {
    const { config, root, env } = this.options;
    if (config.url !== undefined) {
      const headers: Record<string, string> = { ...config.headers };
      if (config.bearer_token_env) {
        const token = env[config.bearer_token_env];
        if (!token)
          throw new Error(
            `the environment variable ${config.bearer_token_env} (bearer_token_env) is not set`,
          );
        headers.Authorization = `Bearer ${token}`;
      }
      return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers } });
    }
    const transport = new StdioClientTransport({
      command: config.command!,
      args: config.args ?? [],
      // Only the SDK's short safe list (PATH, HOME, USER...) and what the config declares: never
      // Spark's whole environment, which holds the person's secrets.
      env: { ...getDefaultEnvironment(), ...config.env },
      cwd: path.resolve(root, config.cwd ?? "."),
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Buffer) => this.stderr.add(chunk));
    return transport satisfies Transport;
  }

  /** The tool as the model sees it; null (with a notice) for one that cannot be offered. */
  private modelTool(listed: {
    name: string;
    description?: string;
    inputSchema: unknown;
  }): McpListedTool | null {
    const skip = (why: string) => {
      this.options.onNotice(
        `MCP server ${this.options.name}: tool ${JSON.stringify(listed.name.slice(0, 80))} skipped: ${why}.`,
      );
      return null;
    };
    const name = mcpToolName(this.options.name, listed.name);
    if (!name) return skip("its name has characters outside A-Z a-z 0-9 _ - or is too long");
    if (JSON.stringify(listed.inputSchema).length > MAX_SCHEMA_BYTES) {
      return skip(`its input schema is over ${MAX_SCHEMA_BYTES / 1024} KiB`);
    }
    const description = listed.description ?? "";
    return {
      name,
      tool: listed.name,
      description:
        description.length > MAX_DESCRIPTION_CHARS
          ? `${description.slice(0, MAX_DESCRIPTION_CHARS)}…`
          : description,
      inputSchema: listed.inputSchema as Record<string, unknown>,
    };
  }

  private settle(state: McpServerState, error?: string, { quiet = false } = {}): void {
    this.state = state;
    this.error = error;
    // A stopped server's tools stay listed: threads that offered them still name them.
    if (state === "failed") this.tools = [];
    if (error !== undefined && !quiet)
      this.options.onNotice(`MCP server ${this.options.name} ${state}: ${error}`);
    this.options.onChange();
  }

  private unavailable(): ToolError {
    const why = this.error ? ` (${this.error})` : "";
    const what = this.state === "failed" ? "failed to start" : "is not running";
    return new ToolError(
      "mcp_unavailable",
      `The MCP server '${this.options.name}' ${what}${why}. Its tools cannot be used now: ` +
        `go on without them, or tell the user the server needs fixing.`,
    );
  }

  private reason(error: unknown): string {
    if (this.closing.signal.aborted) return "Spark closed it";
    if (error instanceof DOMException && error.name === "TimeoutError") {
      return this.withStderr(
        `it did not start within ${this.options.config.startup_timeout_ms ?? MCP_STARTUP_TIMEOUT_MS} ms`,
      );
    }
    return this.withStderr(messageOf(error));
  }

  /** `why`, with the last of the server's stderr when it wrote any. */
  private withStderr(why: string): string {
    const stderr = this.stderr.text().trim();
    return stderr ? `${why}; its stderr ends:\n${stderr.slice(-1024)}` : why;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
