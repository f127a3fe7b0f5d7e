import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { type Command, Option } from "commander";
import { McpHub } from "../agent/mcp/mcp-hub.js";
import type { McpServerList } from "../agent/mcp/mcp-server-list.js";
import type { McpServerSettings } from "../agent/mcp/mcp-server-settings.js";
import { sessionsDir } from "../agent/transcript.js";
import { removeServerState, writeServerState } from "../config/server-state.js";
import {
  describeIgnoredSettings,
  type Limits,
  loadConfig,
  type ResolvedConfig,
  tierAdmission,
} from "../config/spark-config.js";
import type { Engine } from "../engine/engine.js";
import { describeBackend, unusedGpuNotice } from "../engine/llama/backend-info.js";
import { probeGpu } from "../engine/llama/gpu-probe.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { AgentHost } from "../host/agent-host.js";
import { kvStateSettings } from "../models/kv-state-settings.js";
import { DEFAULT_MODEL, parseModelSpec } from "../models/model-uri.js";
import { resolveModel } from "../models/resolve-model.js";
import { SparkError } from "../protocol/errors.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer, type SparkServerOptions } from "../server/spark-server.js";
import { createProgressBar } from "../terminal/progress-bar.js";
import { StatusLine } from "../terminal/status-line.js";
import { openBrowser, webAppDir, webAppUrl } from "../web/web-app.js";
import { AgentRuntime } from "./agent-runtime.js";
import { integer } from "./integer-option.js";
import { readKeyFile, warnKeyOnCommandLine } from "./key-flags.js";
import { loadScriptFile } from "./scripted-script.js";
import {
  addServingFlags,
  loadUpstreamEngine,
  SERVING_HELP,
  type ServingFlags,
  servingOptions,
} from "./serving-flags.js";
import { SessionThreadSource } from "./session-thread-source.js";
import { chooseTiers, tierRegistry } from "./tier-engines.js";

export interface ServeOptions extends ServingFlags {
  model?: string;
  draftModel?: string;
  engine: "llama" | "scripted" | "upstream";
  host: string;
  port: number;
  apiKey: string[];
  /** Files holding a key each (`--api-key-file`, repeatable). */
  apiKeyFile?: string[];
  /** False with `--no-auth`: no key at all (loopback only). */
  auth: boolean;
  allowOrigin: string[];
  ctxSize?: number;
  parallel: number;
  threads?: number;
  gpu: boolean;
  tlsCert?: string;
  tlsKey?: string;
  maxBodyMb: number;
  tokensPerSecond: number;
  script?: string;
  open: boolean;
}

const SERVE_HELP = `
Endpoints (one port):
  GET  /                      the web app (open the printed URL: it carries the key)
  WS   /v1/agent              the agent host the web app and editors use
  POST /v1/responses          Responses API, JSON or SSE (stream: true)
  WS   /v1/responses          Responses WebSocket mode: response.create, previous_response_id,
                              generate: false, response.cancel, response.steer
  POST /v1/chat/completions   Chat Completions, JSON or SSE
  GET  /v1/models, /healthz

Examples:
  $ spark serve                                   # the default model (downloaded once)
  $ spark serve --model ./qwen2.5-coder-1.5b-instruct-q8_0.gguf
  $ SPARK_API_KEY=... spark serve --model hf:owner/repo/file.gguf --port 9000
  $ spark serve --engine scripted                  # no model: a deterministic echo engine
  $ spark serve --model ./qwen2.5-coder-7b-instruct-q4_k_m.gguf \
      --draft-model ./qwen2.5-coder-0.5b-instruct-q8_0.gguf   # speculative decoding (for a GPU)

The server binds 127.0.0.1 unless --host says otherwise, and refuses requests from web pages of
other origins. Every request needs the API key: SPARK_API_KEY or --api-key-file (--api-key too,
but any local user sees it in ps), else a random key made at start. Either way the key, port, pid
and workspace are written for local clients (the VS Code extension) to a file only you can read,
$XDG_STATE_HOME/spark/servers/<port>.json (~/.local/state/spark/..., or $SPARK_HOME/servers/...),
removed when the server stops.
--no-auth serves without a key, on a loopback address only.
`;

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function registerServeCommand(program: Command): void {
  const command = program
    .command("serve")
    .description("serve a model over the OpenAI Responses API (HTTP, SSE and WebSocket) and Chat Completions")
    .option(
      "-m, --model <path|uri>",
      "a local GGUF file or hf:owner/repo/file.gguf (default: the default model)",
    )
    .option(
      "--draft-model <path|uri>",
      "a smaller model with the same vocabulary (GGUF or hf: URI) drafting tokens for the model to " +
        "verify (default: none; pays off mainly on a GPU: on a CPU its own decode steps cost about as " +
        "much as they save)",
    )
    .addOption(
      new Option("--engine <name>", "which engine runs the model")
        .choices(["llama", "scripted", "upstream"])
        .default("llama"),
    )
    .option("--host <host>", "address to bind", "127.0.0.1")
    .option("-p, --port <n>", "port to listen on (0 picks a free one)", integer(0, 65535), 8080)
    .option(
      "--api-key-file <file>",
      "require the bearer key this file holds (repeatable; also SPARK_API_KEY; default: a random key made at start)",
      collect,
      [],
    )
    .option("--api-key <key>", "a key on the command line, visible in ps (prefer the above)", collect, [])
    .option("--no-auth", "require no key at all (only on a loopback --host)")
    .option(
      "--allow-origin <origin>",
      "also accept browser requests from this origin (repeatable)",
      collect,
      [],
    )
    .option(
      "-c, --ctx-size <n>",
      "tokens per conversation (default: the model's, at most 32768)",
      integer(256, 1 << 20),
    )
    .option("--parallel <n>", "conversations decoded at once", integer(1, 64), 2)
    .option("-t, --threads <n>", "CPU threads (default: physical cores)", integer(1, 1024))
    .option("--no-gpu", "never use a GPU")
    .option("--tls-cert <file>", "PEM certificate: serve HTTPS and WSS (with --tls-key)")
    .option("--tls-key <file>", "PEM private key for --tls-cert")
    .option("--max-body-mb <n>", "largest request body or WebSocket event, in MiB", integer(1, 1024), 8)
    .option(
      "--tokens-per-second <n>",
      "scripted engine: emission rate (0 = flat out)",
      integer(0, 10_000_000),
      0,
    )
    .option(
      "--script <file.json>",
      "scripted engine: replies from a JSON file (see src/cli/scripted-script.ts)",
    )
    .option("--open", "open the web app in the default browser once serving", false)
    .addHelpText("after", SERVE_HELP)
    .action(async (options: ServeOptions) => {
      await serve(options);
    });
  addServingFlags(command).addHelpText("after", SERVING_HELP);
}

async function serve(options: ServeOptions): Promise<void> {
  if (Boolean(options.tlsCert) !== Boolean(options.tlsKey)) {
    throw new SparkError("invalid_request", "--tls-cert and --tls-key go together.");
  }
  if (options.draftModel && options.engine !== "llama") {
    throw new SparkError("invalid_request", "--draft-model needs the llama engine.");
  }
  if (options.apiKey.length > 0) warnKeyOnCommandLine("--api-key", "SPARK_API_KEY", "--api-key-file");
  const apiKeys = serveKeys(options, process.env);
  const config = await loadConfig({ cwd: process.cwd(), env: process.env });
  if (config.ignored) process.stderr.write(`spark: warning: ${describeIgnoredSettings(config.ignored)}\n`);
  // With tiers in a config file, `spark serve` serves each as a model named after it, unless
  // --model names a file or --engine another engine (then one model, as without a config).
  const tiered =
    config.sources.length > 0 &&
    options.engine === "llama" &&
    (!options.model || config.tiers[options.model] !== undefined);
  // The server listens at once; a llama model loads behind it (requests for it wait meanwhile).
  let engine: Engine | Promise<Engine>;
  let modelId: string;
  let tiers: ServeStackOptions["tiers"];
  let loaded: Promise<string>;
  /** What the banner says of the model: its context when loaded already, else that it is loading. */
  let shown = "loading in the background; requests wait for it";
  let startLoad = () => {};
  if (tiered) {
    const choice = chooseTiers(config, {
      ...(options.model ? { model: options.model } : {}),
      ...(options.draftModel ? { draftModel: options.draftModel } : {}),
    });
    const models = await tierRegistry(choice, { background: true });
    modelId = choice.defaultTier;
    engine = models.resolve(modelId);
    tiers = { models, config: { ...config, defaultTier: choice.defaultTier, tiers: choice.tiers } };
    loaded = defaultTierLoaded(models, modelId);
  } else if (options.engine === "llama") {
    modelId = llamaModelId(options.model);
    const id = modelId;
    // Started once the banner is out, so download and load progress print below it.
    const llama = new Promise<LlamaEngine>((resolve, reject) => {
      startLoad = () =>
        void loadLlama(options, id, (fraction) => stack.models.setProgress(id, fraction)).then(
          resolve,
          reject,
        );
    });
    engine = llama;
    loaded = llama.then(
      (ready) =>
        `${ready.info.contextSize} tokens of context, ${describeBackend(ready.backend, ready.threads)}`,
    );
  } else {
    const ready = await loadEngine(options);
    engine = ready;
    modelId = ready.info.id;
    shown = `${ready.info.contextSize} tokens of context`;
    loaded = new Promise<string>(() => {});
  }
  // Observed below once the server is up; a load failing before then must not go unhandled.
  loaded.catch(() => {});
  const serving = servingOptions(options, { kind: options.engine, parallel: options.parallel });
  const stack = await startServe({
    engine,
    modelId,
    limits: config.limits ?? {},
    ...(config.mcpServers ? { mcpServers: config.mcpServers } : {}),
    onNotice: (message) => process.stderr.write(`spark: ${message}\n`),
    ...(tiers ? { tiers } : {}),
    host: options.host,
    port: options.port,
    apiKeys,
    allowedOrigins: options.allowOrigin,
    maxBodyBytes: options.maxBodyMb * 1024 * 1024,
    ...(config.limits?.max_connections ? { maxConnections: config.limits.max_connections } : {}),
    ...(config.limits?.store_mb ? { storeBytes: config.limits.store_mb * 1024 * 1024 } : {}),
    ...(config.limits?.connection_minutes
      ? { connectionLifetimeMs: config.limits.connection_minutes * 60_000 }
      : {}),
    ...serving,
    ...(tiers ? { admission: { ...serving.admission, tiers: tierAdmission(tiers.config) } } : {}),
    ...(options.tlsCert && options.tlsKey
      ? { tls: { cert: readFileSync(options.tlsCert), key: readFileSync(options.tlsKey) } }
      : {}),
  });
  const { server } = stack;
  // Without the file, local clients need the key from the printed URL; the server still serves.
  const stateFile = await writeServerState({
    port: server.port,
    key: apiKeys[0] ?? null,
    pid: process.pid,
    workspace: process.cwd(),
    url: server.url,
    started_at: new Date().toISOString(),
  }).catch((error: Error) => {
    process.stderr.write(`spark: warning: could not record the server for local clients: ${error.message}\n`);
    return null;
  });
  const ws = server.url.replace(/^http/, "ws");
  const app = stack.appUrl ?? "not built (npm run build:web)";
  const kind = tiers ? tiers.config.tiers[modelId]!.engine : options.engine;
  process.stderr.write(
    `Spark is serving ${tiers ? `the tiers ${Object.keys(tiers.config.tiers).join(", ")} (default ${modelId})` : modelId} (${kind}, ${shown})\n` +
      `  Web app    ${app}\n` +
      `  HTTP       ${server.url}/v1\n  WebSocket  ${ws}/v1/responses\n  Agent      ${ws}/v1/agent\n` +
      `  API key    ${apiKeys.length ? `required${stateFile ? `; kept for local clients in ${stateFile}` : ""}` : "none (--no-auth)"}\n` +
      "Press Ctrl+C to stop.\n",
  );
  startLoad();
  const started = performance.now();
  // A model that cannot load stops the server with its error; until then requests wait for it.
  // (`loaded` never settles for an engine that was ready before the server started.)
  const failed = loaded.then(
    (details) => {
      process.stderr.write(
        `Model ready in ${((performance.now() - started) / 1000).toFixed(1)} s: ${modelId}, ${details}\n`,
      );
      return new Promise<never>(() => {});
    },
    (error: unknown) => {
      throw error;
    },
  );
  if (options.open && stack.appUrl && !(await openBrowser(stack.appUrl))) {
    process.stderr.write("Could not start a browser; open the web app address above.\n");
  }
  let stop = () => {};
  const stopped = new Promise<void>((resolve) => {
    stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  try {
    await Promise.race([stopped, failed]);
    process.stderr.write("Stopping...\n");
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    if (stateFile) await removeServerState(stateFile);
    await stack.close();
  }
}

/** The id a llama model is served under: its file name without `.gguf`, or `repo:quant` (checked before listening). */
function llamaModelId(spec: string | undefined): string {
  const ref = parseModelSpec(spec === undefined || spec.trim() === "" ? DEFAULT_MODEL : spec);
  return ref.kind === "local" ? path.basename(ref.path).replace(/\.gguf$/i, "") : ref.name;
}

/** Resolves with a description once the default tier has loaded; rejects with why it could not. */
async function defaultTierLoaded(models: ModelRegistry, id: string): Promise<string> {
  await models.settled();
  const status = models.list().find((model) => model.id === id);
  if (status?.status === "failed")
    throw new SparkError("model_not_loaded", `The model '${id}' failed to load: ${status.error}`);
  return `${models.resolve(id).info.contextSize} tokens of context`;
}

/**
 * The keys `spark serve` requires: `--api-key`, `--api-key-file` and SPARK_API_KEY, else one
 * random key (32 bytes, base64url). `--no-auth` requires none, and is refused off loopback or together with a key.
 */
export function serveKeys(
  options: Pick<ServeOptions, "apiKey" | "apiKeyFile" | "auth" | "host">,
  env: NodeJS.ProcessEnv,
): string[] {
  const given = [
    ...options.apiKey,
    ...(options.apiKeyFile ?? []).map((file) => readKeyFile(file, "--api-key-file")),
    ...(env.SPARK_API_KEY ? [env.SPARK_API_KEY] : []),
  ];
  if (options.auth) return given.length > 0 ? given : [randomBytes(32).toString("base64url")];
  if (given.length > 0) {
    throw new SparkError(
      "invalid_request",
      "--no-auth and an API key (--api-key, --api-key-file or SPARK_API_KEY) contradict each other: pass one.",
    );
  }
  if (!isLoopbackHost(options.host)) {
    throw new SparkError(
      "invalid_request",
      `--no-auth is only for a loopback address, not --host ${options.host}: anyone who can reach it could run commands in this workspace. Drop --no-auth (a key is made for you) or bind 127.0.0.1.`,
    );
  }
  return [];
}

/** Whether `host` (a --host value) is this machine only. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  return bare === "localhost" || bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

export interface ServeStackOptions
  extends Pick<
    SparkServerOptions,
    | "host"
    | "port"
    | "apiKeys"
    | "allowedOrigins"
    | "maxBodyBytes"
    | "tls"
    | "admission"
    | "metricsPublic"
    | "log"
    | "maxConnections"
    | "connectionLifetimeMs"
    | "storeBytes"
  > {
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
  let runtime: AgentRuntime | undefined;
  const limits = options.limits ?? {};
  const cwd = options.cwd ?? process.cwd();
  // Started before the host so the host lists them from its first client; the runtime owns them.
  const mcp = new McpHub({
    servers: options.mcpServers ?? {},
    root: cwd,
    ...(options.onNotice ? { onNotice: options.onNotice } : {}),
  });
  mcp.start();
  const host = new AgentHost(new SessionThreadSource(() => runtime!, options.sessionsDir ?? sessionsDir()), {
    ...(limits.host_replay_mb ? { replayBytes: limits.host_replay_mb * 1024 * 1024 } : {}),
    ...(limits.max_threads ? { maxThreads: limits.max_threads } : {}),
    ...(limits.thread_idle_minutes ? { idleMs: limits.thread_idle_minutes * 60_000 } : {}),
    mcp: options.mcp ?? mcp,
  });
  const {
    engine: _,
    modelId: __,
    cwd: ___,
    sessionsDir: ____,
    webDir: _____,
    tiers: ______,
    limits: _______,
    mcp: ________,
    mcpServers: _________,
    onNotice: __________,
    ...serverOptions
  } = options;
  let server: SparkServer | undefined;
  try {
    server = await SparkServer.start({
      ...serverOptions,
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
  const started = runtime;
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      host.interruptAll();
      host.dispose();
      await started.dispose();
      await server.close();
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

async function loadEngine(options: ServeOptions): Promise<Engine> {
  if (options.engine === "upstream") return loadUpstreamEngine(options, options.ctxSize);
  return new ScriptedEngine({
    tokensPerSecond: options.tokensPerSecond,
    ...(options.script ? { script: loadScriptFile(options.script) } : {}),
  });
}

/** Downloads (when needed) and loads the llama model, with progress on stderr and to `onLoadProgress`. */
async function loadLlama(
  options: ServeOptions,
  id: string,
  onLoadProgress: (fraction: number) => void,
): Promise<LlamaEngine> {
  const label = options.model ? options.model.split("/").at(-1)! : "default model";
  const download = createProgressBar(label);
  const resolved = await resolveModel(options.model, { onProgress: (p) => download.update(p) });
  download.finish();
  let draftPath: string | undefined;
  if (options.draftModel) {
    const draftDownload = createProgressBar(options.draftModel.split("/").at(-1)!);
    const draft = await resolveModel(options.draftModel, { onProgress: (p) => draftDownload.update(p) });
    draftDownload.finish();
    draftPath = draft.path;
  }
  const loading = new StatusLine(`Loading ${resolved.path.split("/").at(-1)}`);
  const started = performance.now();
  // Beside the load: bounded (2 s per tool), and never needed before the model is ready.
  const probe = options.gpu ? probeGpu() : null;
  const engine = await LlamaEngine.create({
    id,
    modelPath: resolved.path,
    ...(draftPath ? { draftModelPath: draftPath } : {}),
    contextSize: options.ctxSize,
    sequences: options.parallel,
    threads: options.threads,
    gpu: options.gpu ? "auto" : false,
    kvStateCache: kvStateSettings(),
    onLoadProgress: (fraction) => {
      loading.update(fraction);
      onLoadProgress(fraction);
    },
  });
  const drafting = draftPath ? `, drafting with ${draftPath.split("/").at(-1)}` : "";
  const binary = `${engine.binary.build} engine binary${engine.binary.nativeLoop ? ", native decode loop" : ""}`;
  loading.done(
    `Loaded in ${((performance.now() - started) / 1000).toFixed(1)} s on ${engine.threads} threads (${binary})${drafting}`,
  );
  const notice = probe && (await unusedGpuNotice(probe, engine.backend.backend));
  if (notice) process.stderr.write(`spark: ${notice}\n`);
  return engine;
}
