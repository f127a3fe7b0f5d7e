import { type Command, Option } from "commander";
import { removeServerState, writeServerState } from "../config/server-state.js";
import {
  describeIgnoredSettings,
  loadConfig,
  type ResolvedConfig,
  tierAdmission,
} from "../config/spark-config.js";
import type { SparkServer } from "../server/spark-server.js";
import { openBrowser } from "../web/web-app.js";
import { integer } from "./integer-option.js";
import { warnKeyOnCommandLine } from "./key-flags.js";
import { type ServedModels, serveModels } from "./serve-models.js";
import { checkServeOptions, readTls, type ServeOptions, serveKeys } from "./serve-options.js";
import { type ServeStack, type ServeStackOptions, startServe } from "./serve-stack.js";
import { addServingFlags, openResponseStore, SERVING_HELP, servingOptions } from "./serving-flags.js";

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
        .choices(["llama", "upstream"])
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
      "tokens per conversation (default: the model's, at least 4096 and at most 32768)",
      integer(256, 1 << 20),
    )
    .option("--parallel <n>", "conversations decoded at once", integer(1, 64), 2)
    .option("-t, --threads <n>", "CPU threads (default: physical cores)", integer(1, 1024))
    .option("--no-gpu", "never use a GPU")
    .option("--tls-cert <file>", "PEM certificate: serve HTTPS and WSS (with --tls-key)")
    .option("--tls-key <file>", "PEM private key for --tls-cert")
    .option("--max-body-mb <n>", "largest request body or WebSocket event, in MiB", integer(1, 1024), 8)
    .option("--open", "open the web app in the default browser once serving", false)
    .addHelpText("after", SERVE_HELP)
    .action(async (options: ServeOptions) => {
      await serve(options);
    });
  addServingFlags(command).addHelpText("after", SERVING_HELP);
}

async function serve(options: ServeOptions): Promise<void> {
  checkServeOptions(options);
  if (options.apiKey.length > 0) warnKeyOnCommandLine("--api-key", "SPARK_API_KEY", "--api-key-file");
  const apiKeys = serveKeys(options, process.env);
  const config = await loadConfig({ cwd: process.cwd(), env: process.env });
  if (config.ignored) process.stderr.write(`spark: warning: ${describeIgnoredSettings(config.ignored)}\n`);
  // The server listens at once; a llama model loads behind it (requests for it wait meanwhile).
  const served = await serveModels(options, config);
  const stackSettings = stackOptions(options, config, served, apiKeys);
  // A shared store is reached before the server listens: a wrong URL or password stops it here.
  const store = await openResponseStore(options, stackSettings);
  const stack = await startServe({ ...stackSettings, ...(store ? { store } : {}) });
  const stateFile = await recordServer(stack.server, apiKeys[0]);
  process.stderr.write(banner(stack, served, apiKeys, stateFile));
  using stop = stopSignals();
  // A model that cannot load stops the server with its error; until then requests wait for it.
  const stopping = Promise.race([stop.requested, modelReady(served, stack)]);
  stopping.catch(() => {});
  if (options.open && stack.appUrl && !(await openBrowser(stack.appUrl))) {
    process.stderr.write("Could not start a browser; open the web app address above.\n");
  }
  try {
    await stopping;
    process.stderr.write("Stopping...\n");
  } finally {
    if (stateFile) await removeServerState(stateFile);
    await stack.close();
  }
}

/** What the flags and the config ask of the server, the agent host and the models. */
function stackOptions(
  options: ServeOptions,
  config: ResolvedConfig,
  served: ServedModels,
  apiKeys: string[],
): ServeStackOptions {
  const limits = config.limits ?? {};
  const serving = servingOptions(options, { kind: served.kind, parallel: options.parallel });
  const tls = readTls(options);
  return {
    engine: served.engine,
    modelId: served.modelId,
    ...(served.tiers ? { tiers: served.tiers } : {}),
    limits,
    ...(config.mcpServers ? { mcpServers: config.mcpServers } : {}),
    onNotice: (message) => process.stderr.write(`spark: ${message}\n`),
    host: options.host,
    port: options.port,
    apiKeys,
    allowedOrigins: options.allowOrigin,
    maxBodyBytes: options.maxBodyMb * 1024 * 1024,
    ...(limits.max_connections ? { maxConnections: limits.max_connections } : {}),
    ...(limits.store_mb ? { storeBytes: limits.store_mb * 1024 * 1024 } : {}),
    ...(limits.connection_minutes ? { connectionLifetimeMs: limits.connection_minutes * 60_000 } : {}),
    ...serving,
    ...(served.tiers
      ? { admission: { ...serving.admission, tiers: tierAdmission(served.tiers.config) } }
      : {}),
    ...(tls ? { tls } : {}),
  };
}

/** Records the server for local clients (the VS Code extension); null, with a warning, when it cannot. */
function recordServer(server: SparkServer, key: string | undefined): Promise<string | null> {
  // Without the file, local clients need the key from the printed URL; the server still serves.
  return writeServerState({
    port: server.port,
    key: key ?? null,
    pid: process.pid,
    workspace: process.cwd(),
    url: server.url,
    started_at: new Date().toISOString(),
  }).catch((error: Error) => {
    process.stderr.write(`spark: warning: could not record the server for local clients: ${error.message}\n`);
    return null;
  });
}

function banner(
  stack: ServeStack,
  served: ServedModels,
  apiKeys: string[],
  stateFile: string | null,
): string {
  const { server } = stack;
  const { tiers, modelId } = served;
  const ws = server.url.replace(/^http/, "ws");
  const what = tiers
    ? `the tiers ${Object.keys(tiers.config.tiers).join(", ")} (default ${modelId})`
    : modelId;
  const kind = tiers ? tiers.config.tiers[modelId]!.engine : served.kind;
  const key = apiKeys.length
    ? `required${stateFile ? `; kept for local clients in ${stateFile}` : ""}`
    : "none (--no-auth)";
  return (
    `Spark is serving ${what} (${kind}, ${served.shown})\n` +
    `  Web app    ${stack.appUrl ?? "not built (npm run build:web)"}\n` +
    `  HTTP       ${server.url}/v1\n  WebSocket  ${ws}/v1/responses\n  Agent      ${ws}/v1/agent\n` +
    `  API key    ${key}\n` +
    `  Store      ${stack.server.store.description}${stack.server.store.shared ? " (shared)" : ""}\n` +
    "Press Ctrl+C to stop.\n"
  );
}

/**
 * Starts loading the model (after the banner, so its progress prints below it) and says when it is
 * ready; rejects with why it cannot load. Never resolves.
 */
async function modelReady(served: ServedModels, stack: ServeStack): Promise<never> {
  const started = performance.now();
  const details = await served.load((fraction) => stack.models.setProgress(served.modelId, fraction));
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stderr.write(`Model ready in ${seconds} s: ${served.modelId}, ${details}\n`);
  return new Promise<never>(() => {});
}

/** Resolves `requested` on Ctrl+C (SIGINT) or SIGTERM; disposing stops listening. */
function stopSignals(): { requested: Promise<void> } & Disposable {
  let stop = () => {};
  const requested = new Promise<void>((resolve) => {
    stop = () => resolve();
  });
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return {
    requested,
    [Symbol.dispose]: () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    },
  };
}
