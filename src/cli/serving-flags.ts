import { type Command, InvalidArgumentError, Option } from "commander";
import { DEFAULT_SESSION_HEADER, UpstreamEngine } from "../engine/upstream/upstream-engine.js";
import { SparkError } from "../protocol/errors.js";
import type { ResponseStore } from "../server/response-store.js";
import type { SparkServerOptions } from "../server/spark-server.js";
import { parseRedisUrl } from "../server/store/redis-url.js";
import { keyFromFlags, readKeyFile } from "./key-flags.js";

/** `spark serve`'s flags for upstream engines, admission control, metrics and logs. */
export interface ServingFlags {
  upstream: string[];
  upstreamModel?: string;
  upstreamApiKey?: string;
  upstreamApiKeyFile?: string;
  upstreamRouter: boolean;
  upstreamHealth: "on" | "off";
  upstreamRouting: "prefix" | "least-loaded";
  sessionHeader: string;
  maxConcurrent?: number;
  maxQueue?: number;
  queueTimeoutMs?: number;
  rateLimitRpm?: number;
  rateLimitTpm?: number;
  metricsPublic: boolean;
  log: "text" | "json" | "off";
  maxConnections?: number;
  connectionMinutes?: number;
  storeMb?: number;
  /** `memory` or a Redis URL. */
  store?: string;
  storePasswordFile?: string;
  storeTtlMinutes?: number;
}

export const SERVING_HELP = `
Upstream engines (any OpenAI-compatible server: vLLM, SGLang, llama-server, Ollama, a cloud API):
  $ spark serve --engine upstream --upstream http://gpu-1:8000/v1 --upstream http://gpu-2:8000/v1 \\
      --upstream-model Qwen/Qwen2.5-Coder-32B-Instruct
  Replicas are health-checked (GET /models); a conversation stays on its replica while healthy,
  and a new one goes where its prefix likely is (--upstream-routing prefix, the default).
  Behind a router (vLLM router, SGLang gateway, llm-d, nginx): one --upstream and --upstream-router
  (no health checks; every request carries the conversation in --session-header, default x-session-id).

Admission control and observability:
  --max-concurrent 4 --max-queue 64 --queue-timeout-ms 30000   queue with positions; 429 when full
  --rate-limit-rpm 60 --rate-limit-tpm 100000                    per API key
  --max-connections 256 --store-mb 256                           memory bounds; 503 server_busy past the first
  --connection-minutes 60                                        a Responses WebSocket's lifetime; clients reconnect
  GET /metrics (Prometheus; needs the API key unless --metrics-public); --log json for JSON lines.

Several servers sharing previous_response_id chains (behind a load balancer; see the README):
  --store redis://redis-host:6379/0 --store-password-file ~/.redis-pass --store-ttl-minutes 1440
`;

function whole(min: number) {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min)
      throw new InvalidArgumentError(`expected a whole number of at least ${min}`);
    return n;
  };
}

function headerName(value: string): string {
  // An HTTP field name (RFC 9110 token).
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/.test(value))
    throw new InvalidArgumentError("expected an HTTP header name");
  return value.toLowerCase();
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Adds the flags of {@link ServingFlags} to the serve command. */
export function addServingFlags(command: Command): Command {
  return command
    .option(
      "--upstream <url>",
      "upstream engine: a replica's API root, e.g. http://host:8000/v1 (repeatable)",
      collect,
      [],
    )
    .option("--upstream-model <name>", "upstream engine: the model name the upstream serves")
    .option(
      "--upstream-api-key-file <file>",
      "upstream engine: a file holding the upstream's bearer key (also SPARK_UPSTREAM_API_KEY)",
    )
    .option(
      "--upstream-api-key <key>",
      "upstream engine: the key on the command line, visible in ps (prefer the above)",
    )
    .option(
      "--upstream-router",
      "upstream engine: the one --upstream is a router in front of the replicas (health checks off)",
      false,
    )
    .addOption(
      new Option("--upstream-health <mode>", "upstream engine: health checks of the replicas (GET /models)")
        .choices(["on", "off"])
        .default("on"),
    )
    .addOption(
      new Option(
        "--upstream-routing <policy>",
        "upstream engine: a new conversation's replica: by cached prefix and load, or by load alone",
      )
        .choices(["prefix", "least-loaded"])
        .default("prefix"),
    )
    .option(
      "--session-header <name>",
      "upstream engine: the header carrying the conversation id to the upstream",
      headerName,
      DEFAULT_SESSION_HEADER,
    )
    .option(
      "--max-concurrent <n>",
      "responses running at once per model; more wait in a queue (default: --parallel for llama, else unlimited)",
      whole(1),
    )
    .option(
      "--max-queue <n>",
      "responses waiting at once; beyond it 429 with Retry-After (default: unlimited)",
      whole(0),
    )
    .option(
      "--queue-timeout-ms <n>",
      "longest wait in the queue before a clear queue_timeout error",
      whole(1),
    )
    .option("--rate-limit-rpm <n>", "requests per minute per API key", whole(1))
    .option("--rate-limit-tpm <n>", "tokens per minute per API key (evaluated input + output)", whole(1))
    .option(
      "--max-connections <n>",
      "WebSocket connections open at once; beyond it an upgrade gets 503 server_busy (default: 256)",
      whole(1),
    )
    .option(
      "--connection-minutes <n>",
      "minutes a Responses WebSocket stays open; then websocket_connection_limit_reached and clients reconnect (default: 60)",
      whole(1),
    )
    .option(
      "--store-mb <n>",
      "MiB of stored responses kept for previous_response_id, least recently used evicted first (default: 256)",
      whole(1),
    )
    .option(
      "--store <url>",
      "where stored responses are kept: memory (default), or a Redis shared by several servers: " +
        "redis://[user:password@]host[:port][/db], rediss://… (TLS) or unix:///path/to/redis.sock[?db=N]",
    )
    .option("--store-password-file <file>", "a file holding the Redis password (instead of one in the URL)")
    .option(
      "--store-ttl-minutes <n>",
      "minutes a stored response not used expires after; 0: never (default: 1440)",
      whole(0),
    )
    .option("--metrics-public", "serve GET /metrics without an API key", false)
    .addOption(
      new Option("--log <format>", "one line per request on stderr")
        .choices(["text", "json", "off"])
        .default("text"),
    );
}

/** The server options the flags ask for; `parallel` is the llama engine's sequence count. */
export function servingOptions(
  flags: ServingFlags,
  engine: { kind: "llama" | "scripted" | "upstream"; parallel: number },
): Pick<
  SparkServerOptions,
  | "admission"
  | "metricsPublic"
  | "log"
  | "maxConnections"
  | "connectionLifetimeMs"
  | "storeBytes"
  | "storeTtlMs"
> {
  const maxConcurrent = flags.maxConcurrent ?? (engine.kind === "llama" ? engine.parallel : undefined);
  return {
    admission: {
      ...(maxConcurrent !== undefined ? { maxConcurrent } : {}),
      ...(flags.maxQueue !== undefined ? { maxQueue: flags.maxQueue } : {}),
      ...(flags.queueTimeoutMs !== undefined ? { queueTimeoutMs: flags.queueTimeoutMs } : {}),
      ...(flags.rateLimitRpm !== undefined ? { requestsPerMinute: flags.rateLimitRpm } : {}),
      ...(flags.rateLimitTpm !== undefined ? { tokensPerMinute: flags.rateLimitTpm } : {}),
    },
    metricsPublic: flags.metricsPublic,
    log: { format: flags.log },
    ...(flags.maxConnections !== undefined ? { maxConnections: flags.maxConnections } : {}),
    ...(flags.connectionMinutes !== undefined
      ? { connectionLifetimeMs: flags.connectionMinutes * 60_000 }
      : {}),
    ...(flags.storeMb !== undefined ? { storeBytes: flags.storeMb * 1024 * 1024 } : {}),
    ...(flags.storeTtlMinutes !== undefined ? { storeTtlMs: flags.storeTtlMinutes * 60_000 } : {}),
  };
}

/**
 * The response store `--store` names, connected and checked; undefined for `memory` (the server's
 * own default). Throws `invalid_request` for a bad URL, `store_unavailable` when Redis cannot be
 * reached or refuses the login. The password is never part of a message.
 */
export async function openResponseStore(
  flags: Pick<ServingFlags, "store" | "storePasswordFile">,
  bounds: Pick<SparkServerOptions, "storeBytes" | "storeCapacity" | "storeTtlMs">,
): Promise<ResponseStore | undefined> {
  if (flags.store === undefined || flags.store === "memory") {
    if (flags.storePasswordFile !== undefined)
      throw new SparkError("invalid_request", "--store-password-file needs --store with a Redis URL.");
    return undefined;
  }
  const target = parseRedisUrl(flags.store);
  if (target.password !== undefined) {
    if (flags.storePasswordFile !== undefined)
      throw new SparkError(
        "invalid_request",
        "--store has a password and --store-password-file gives one: pass one.",
      );
    process.stderr.write(
      "spark: warning: a password in --store shows to every local user (ps); pass it with --store-password-file instead.\n",
    );
  }
  if (flags.storePasswordFile !== undefined)
    target.password = readKeyFile(flags.storePasswordFile, "--store-password-file");
  // Imported only here: the Redis client is some 600 modules that a server with its default
  // in-memory store never runs.
  const { RedisResponseStore } = await import("../server/store/redis-response-store.js");
  return RedisResponseStore.create({
    target,
    ...(bounds.storeBytes !== undefined ? { maxBytes: bounds.storeBytes } : {}),
    ...(bounds.storeCapacity !== undefined ? { maxEntries: bounds.storeCapacity } : {}),
    ...(bounds.storeTtlMs !== undefined ? { ttlMs: bounds.storeTtlMs } : {}),
  });
}

/** `--engine upstream`: the replicas named by `--upstream`, health-checked once before serving. */
export async function loadUpstreamEngine(flags: ServingFlags, contextSize?: number): Promise<UpstreamEngine> {
  if (flags.upstream.length === 0) {
    throw new SparkError("invalid_request", "--engine upstream needs at least one --upstream <url>.");
  }
  if (flags.upstreamRouter && flags.upstream.length > 1) {
    throw new SparkError(
      "invalid_request",
      "--upstream-router takes one --upstream (the router); the router balances its replicas.",
    );
  }
  if (!flags.upstreamModel) {
    throw new SparkError("invalid_request", "--engine upstream needs --upstream-model <name>.");
  }
  const apiKey = keyFromFlags(
    { key: flags.upstreamApiKey, file: flags.upstreamApiKeyFile },
    { flag: "--upstream-api-key", fileFlag: "--upstream-api-key-file", env: ["SPARK_UPSTREAM_API_KEY"] },
  );
  return UpstreamEngine.create({
    replicas: flags.upstream,
    model: flags.upstreamModel,
    healthChecks: flags.upstreamHealth === "on" && !flags.upstreamRouter,
    routing: flags.upstreamRouting,
    sessionHeader: flags.sessionHeader,
    ...(apiKey ? { apiKey } : {}),
    ...(contextSize !== undefined ? { contextSize } : {}),
  });
}
