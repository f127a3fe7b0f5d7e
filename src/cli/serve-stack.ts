import { McpHub } from "../agent/mcp/mcp-hub.js";
import type { McpServerList } from "../agent/mcp/mcp-server-list.js";
import type { McpServerSettings } from "../agent/mcp/mcp-server-settings.js";
import { sessionsDir } from "../agent/transcript.js";
import type { Limits, ResolvedConfig } from "../config/spark-config.js";
import type { Engine } from "../engine/engine.js";
import { AgentHost } from "../host/agent-host.js";
import { SparkError } from "../protocol/errors.js";
import { AgentRuntime } from "../runtime/agent-runtime.js";
import { SessionThreadSource } from "../runtime/session-thread-source.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer, type SparkServerOptions } from "../server/spark-server.js";
import { webAppDir, webAppUrl } from "../web/web-app.js";

/** The options of {@link startServe} that go to the server as they are. */
const SERVER_OPTIONS = [
  "host",
  "port",
  "apiKeys",
  "allowedOrigins",
  "maxBodyBytes",
  "tls",
  "admission",
  "metricsPublic",
  "log",
  "maxConnections",
  "connectionLifetimeMs",
  "storeBytes",
  "storeTtlMs",
  "store",
] as const satisfies readonly (keyof SparkServerOptions)[];

type ServerOptions = Pick<SparkServerOptions, (typeof SERVER_OPTIONS)[number]>;

export interface ServeStackOptions extends ServerOptions {
  /**
   * The model; disposed by `close()`. With {@link tiers}, the default tier's engine. A promise is a
   * model still loading (then {@link modelId} names it): the server listens at once and requests
   * for it wait for the load.
   */
  engine: Engine | Promise<Engine>;
  /** The id of a loading {@link engine}. Default: the engine's own. */
  modelId?: string;
  /** `[limits]` of the config: the agent host's and its threads'. Default: none (built-in defaults). */
  limits?: Limits;
  /**
   * Tiers: every tier a model of `models` named after it (see tierRegistry); the agent host's
   * threads start on the default tier and delegate to the delegate tier. Disposed by `close()`.
   */
  tiers?: { models: ModelRegistry; config: ResolvedConfig };
  /** The agent's workspace. Default: the current directory. */
  cwd?: string;
  /** Where the agent host's transcripts are. Default: {@link sessionsDir}. */
  sessionsDir?: string;
  /** The built web app served at `/`; null serves none. Default: {@link webAppDir}. */
  webDir?: string | null;
  /** The agent's MCP servers (config's `[mcp_servers]`), started in the background. Default: none. */
  mcpServers?: Record<string, McpServerSettings>;
  /** What the host lists as the MCP servers instead of {@link mcpServers}' states (tests of the faces). */
  mcp?: McpServerList;
  /** A line for the person: an MCP server failed or stopped. Default: dropped. */
  onNotice?: (message: string) => void;
}

export interface ServeStack extends AsyncDisposable {
  server: SparkServer;
  /** The served models (loading ones report their progress here). */
  models: ModelRegistry;
  host: AgentHost;
  runtime: AgentRuntime;
  /** The web app's address (with the first API key in its fragment), or null when none is served. */
  appUrl: string | null;
  /** Interrupts running turns, then closes the runtime, the server and the model. Idempotent. */
  close(): Promise<void>;
}

/** What `spark serve` runs: the model server, the agent host and the web app on one port. */
export async function startServe(options: ServeStackOptions): Promise<ServeStack> {
  const { engine } = options;
  const id = engine instanceof Promise ? options.modelId : (options.modelId ?? engine.info.id);
  if (id === undefined) throw new SparkError("invalid_request", "A loading model needs its modelId.");
  const models = options.tiers?.models ?? new ModelRegistry();
  if (!options.tiers) models.add(id, engine);
  const apiKeys = options.apiKeys ?? [];
  const webDir = options.webDir === undefined ? webAppDir() : options.webDir;
  const limits = options.limits ?? {};
  const cwd = options.cwd ?? process.cwd();
  // Started before the host so the host lists them from its first client; the runtime owns them.
  const mcp = new McpHub({
    servers: options.mcpServers ?? {},
    root: cwd,
    ...(options.onNotice ? { onNotice: options.onNotice } : {}),
  });
  mcp.start();
  let runtime: AgentRuntime | undefined;
  const host = new AgentHost(new SessionThreadSource(() => runtime!, options.sessionsDir ?? sessionsDir()), {
    ...(limits.host_replay_mb ? { replayBytes: limits.host_replay_mb * 1024 * 1024 } : {}),
    ...(limits.max_threads ? { maxThreads: limits.max_threads } : {}),
    ...(limits.thread_idle_minutes ? { idleMs: limits.thread_idle_minutes * 60_000 } : {}),
    mcp: options.mcp ?? mcp,
  });
  let server: SparkServer | undefined;
  try {
    server = await SparkServer.start({
      ...serverOptions(options),
      models,
      sockets: { "/v1/agent": (socket) => host.accept(socket) },
      ...(webDir ? { staticDir: webDir } : {}),
    });
    // The agent host's threads reach the model like every other client: through this server.
    runtime = await AgentRuntime.start({
      cwd,
      mcp,
      server: `${server.url}/v1`,
      ...(apiKeys[0] ? { apiKey: apiKeys[0] } : {}),
      model: options.tiers?.config.defaultTier ?? id,
      // Threads may switch among the tiers (thread.set_model); the host lists them to every client.
      serverModels: options.tiers ? Object.keys(options.tiers.config.tiers) : [id],
      ...(options.tiers ? { config: options.tiers.config } : {}),
      ...(options.sessionsDir ? { sessionsDir: options.sessionsDir } : {}),
      limits,
    });
  } catch (error) {
    // Nothing owns the MCP servers' processes yet: end them here.
    host.dispose();
    await mcp.dispose();
    await server?.close();
    throw error;
  }
  host.listCatalog(runtime.catalog);
  host.listModels(runtime.models);
  // Started with the runtime: the web app shows how far it is while its first session waits.
  const warmup = runtime.promptWarmup;
  if (warmup && !warmup.progress.done) {
    host.showPromptProgress(warmup.progress);
    warmup.on((progress) => host.showPromptProgress(progress));
  }
  const started = { server, runtime };
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      host.interruptAll();
      host.dispose();
      await started.runtime.dispose();
      await started.server.close();
      await models.dispose();
    })();
    return closing;
  };
  return {
    server,
    models,
    host,
    runtime,
    appUrl: webDir ? webAppUrl(server.url, apiKeys[0]) : null,
    close,
    [Symbol.asyncDispose]: close,
  };
}

function serverOptions(options: ServeStackOptions): ServerOptions {
  const picked: Record<string, unknown> = {};
  for (const key of SERVER_OPTIONS) if (options[key] !== undefined) picked[key] = options[key];
  return picked as ServerOptions;
}
