import { readFile, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parse as parseTomlText } from "smol-toml";
import { z } from "zod";
import { SANDBOX_MODES, type SandboxMode } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import { validate } from "../protocol/validate.js";
import type { AdmissionLimits } from "../server/admission/admission-controller.js";
import { type McpServerConfig, mcpServersSchema } from "./mcp-servers-config.js";
import { configDigest, projectConfigPath, projectTrustStatus } from "./project-trust.js";
import { type IgnoredSetting, withoutUntrustedSettings } from "./untrusted-settings.js";

const tierName = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,31}$/, "a tier name is lowercase letters, digits, - or _");

const admissionSchema = z
  .object({
    max_concurrent: z.number().int().min(1).max(1024).optional(),
    max_queue: z.number().int().min(0).max(100_000).optional(),
    queue_timeout_ms: z.number().int().min(1).max(3_600_000).optional(),
    requests_per_minute: z.number().int().min(1).optional(),
    tokens_per_minute: z.number().int().min(1).optional(),
  })
  .strict();

const tierSchema = z
  .object({
    /** `llama` (embedded) or `upstream` (any OpenAI-compatible endpoint). */
    engine: z.enum(["llama", "upstream"]).optional(),
    /** llama: a GGUF path or hf: URI. upstream: the model id the endpoint serves. */
    model: z.string().min(1).max(1024).optional(),
    /** upstream: one base URL (`http://host:8000/v1`) or several replicas. */
    url: z.union([z.url(), z.array(z.url()).min(1).max(64)]).optional(),
    /** upstream: the environment variable holding the API key (never the key itself). */
    api_key_env: z
      .string()
      .regex(/^[A-Z_][A-Z0-9_]*$/)
      .optional(),
    /** llama: tokens of context per conversation. */
    context: z
      .number()
      .int()
      .min(1024)
      .max(1 << 20)
      .optional(),
    /** llama: conversations decoded at once. */
    parallel: z.number().int().min(1).max(64).optional(),
    /**
     * llama: a smaller GGUF (path or hf: URI) with the same vocabulary that drafts tokens for the
     * model to verify. Default: none (it pays off mainly on a GPU).
     */
    draft_model: z.string().min(1).max(1024).optional(),
    admission: admissionSchema.optional(),
    /** upstream: longest wait for a response's first chunk, headers included. Default: 60000. */
    first_chunk_timeout_ms: z.number().int().min(1).max(3_600_000).optional(),
    /** upstream: longest wait between two streamed chunks. Default: 30000. */
    idle_timeout_ms: z.number().int().min(1).max(3_600_000).optional(),
  })
  .strict()
  .superRefine((tier, ctx) => {
    if (tier.engine === "upstream" && !tier.url)
      ctx.addIssue({ code: "custom", message: "an upstream tier needs url", path: ["url"] });
    if (tier.engine === "upstream" && !tier.model)
      ctx.addIssue({ code: "custom", message: "an upstream tier needs model", path: ["model"] });
  });

/** Memory and work limits (README → Limits); each absent field keeps its default. */
const limitsSchema = z
  .object({
    /** spark serve: WebSocket connections open at once, all endpoints. Default: 256. */
    max_connections: z.number().int().min(1).max(100_000).optional(),
    /** spark serve: minutes a Responses WebSocket stays open before clients must reconnect. Default: 60. */
    connection_minutes: z.number().int().min(1).max(10_080).optional(),
    /** spark serve: MiB of stored responses for previous_response_id. Default: 256. */
    store_mb: z.number().int().min(1).max(1_048_576).optional(),
    /** Agent host: MiB of events kept per thread for reconnecting clients. Default: 4. */
    host_replay_mb: z.number().int().min(1).max(4096).optional(),
    /** Agent host: threads open at once. Default: 32. */
    max_threads: z.number().int().min(1).max(10_000).optional(),
    /** Agent host: minutes before an idle thread is let go (it stays resumable). Default: 10. */
    thread_idle_minutes: z.number().int().min(1).max(10_080).optional(),
    /** Messages queued behind a running turn, per thread. Default: 32. */
    max_queued_turns: z.number().int().min(1).max(10_000).optional(),
    /** MiB of queued messages per thread. Default: 4. */
    max_queued_mb: z.number().int().min(1).max(1024).optional(),
    /** Sub-agents running at once per thread. Default: 4. */
    max_subagents: z.number().int().min(1).max(64).optional(),
    /** Rounds of tool calls one agent turn may run before it stops. Default: 50. */
    max_tool_rounds: z.number().int().min(1).max(10_000).optional(),
    /**
     * Output tokens one model response of the agent may write. Default: a quarter of the model's
     * context, from 256 to 16384.
     */
    max_output_tokens: z.number().int().min(16).max(1_000_000).optional(),
  })
  .strict();

export type Limits = z.infer<typeof limitsSchema>;

export const sparkConfigSchema = z
  .object({
    /** The tier a session starts on. Default: `fast`. */
    default_tier: tierName.optional(),
    /** The tier the `delegate` tool hands longer work to. Default: `deep` when declared. */
    delegate_tier: tierName.optional(),
    tiers: z.record(tierName, tierSchema).optional(),
    /** Where approved commands run (see SandboxMode). Default: `workspace-write`. */
    sandbox: z.enum(SANDBOX_MODES).optional(),
    limits: limitsSchema.optional(),
    /** MCP servers whose tools the agent offers as `mcp__NAME__TOOL` (README → MCP servers). */
    mcp_servers: mcpServersSchema.optional(),
    /** Language-server errors after each edit (README → Diagnostics after edits). */
    diagnostics: z.object({ enabled: z.boolean().optional() }).strict().optional(),
  })
  .strict();

/** A tier after merging: the engine is always set (default `llama`). */
export type TierConfig = z.infer<typeof tierSchema> & { engine: "llama" | "upstream" };
export type SparkConfig = z.infer<typeof sparkConfigSchema>;

export interface ResolvedConfig {
  defaultTier: string;
  delegateTier: string | null;
  tiers: Record<string, TierConfig>;
  /** Where approved commands run. Default (absent): `workspace-write`. */
  sandbox?: SandboxMode;
  /** Memory and work limits; absent fields keep their defaults. */
  limits?: Limits;
  /** MCP servers by name, enabled or not; a project's server replaces the user's of that name. */
  mcpServers?: Record<string, McpServerConfig>;
  /** Ask language servers for the errors each edit introduced. Default (absent): true. */
  diagnostics?: boolean;
  /** Files that contributed, in the order applied. */
  sources: string[];
}

/** The settings of an untrusted project's config that were not applied. */
export interface IgnoredProjectSettings {
  /** The project directory (its real path): where `spark trust` trusts it. */
  root: string;
  file: string;
  /** The project was trusted, but its file has changed since. */
  changed: boolean;
  settings: IgnoredSetting[];
}

export interface LoadedConfig extends ResolvedConfig {
  /** What the project's config would do but may not until the project is trusted; null: nothing. */
  ignored: IgnoredProjectSettings | null;
}

export interface LoadConfigOptions {
  cwd: string;
  env?: NodeJS.ProcessEnv;
  /** Parses TOML text. Default: smol-toml. */
  parseToml?: (text: string) => unknown;
  /** The trusted-projects file. Default: trustFilePath(env). */
  trustFile?: string;
}

/** `$SPARK_CONFIG`, else `$XDG_CONFIG_HOME/spark/config.toml`, else `~/.config/spark/config.toml`. */
export function userConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SPARK_CONFIG) return env.SPARK_CONFIG;
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), ".config");
  return path.join(base, "spark", "config.toml");
}

/**
 * The user's config, then the project's (`./.spark/config.toml`) on top: tiers merge by name,
 * fields of a project tier replace the user's. Without any file, one `fast` tier on the embedded
 * engine with the default model. A project's settings that need trust (every key is classified in
 * project-trust-table.ts) apply only once the user trusts that very file (`spark trust`); until
 * then they are left out and listed in `ignored`, each by its key.
 */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadedConfig> {
  const sources: string[] = [];
  const userFile = userConfigPath(options.env);
  const user = await readConfigFile(userFile, options);
  if (user) sources.push(userFile);
  const projectFile = projectConfigPath(options.cwd);
  let project = await readConfigFile(projectFile, options);
  let ignored: IgnoredProjectSettings | null = null;
  if (project) {
    sources.push(projectFile);
    const held = withoutUntrustedSettings(project.config, user?.config ?? {});
    if (held.ignored.length > 0) {
      const root = await realpath(options.cwd);
      const status = await projectTrustStatus(root, configDigest(project.text), {
        ...(options.env ? { env: options.env } : {}),
        ...(options.trustFile ? { trustFile: options.trustFile } : {}),
      });
      if (status !== "trusted") {
        project = { ...project, config: held.config };
        ignored = { root, file: projectFile, changed: status === "changed", settings: held.ignored };
      }
    }
  }
  const merged = mergeConfig(user?.config ?? {}, project?.config ?? {});
  const tiers: Record<string, TierConfig> = {};
  for (const [name, tier] of Object.entries(merged.tiers ?? {})) {
    const engine = tier.engine ?? "llama";
    for (const field of ["url", "model"] as const) {
      if (engine === "upstream" && !tier[field]) {
        throw new SparkError(
          "invalid_request",
          `${sources.join(", ")}: the upstream tier '${name}' needs ${field} (at 'tiers.${name}.${field}').`,
          { param: `tiers.${name}.${field}` },
        );
      }
    }
    tiers[name] = { ...tier, engine };
  }
  if (Object.keys(tiers).length === 0) tiers.fast = { engine: "llama" };
  const fromEnv = options.env?.SPARK_TIER;
  const defaultTier = fromEnv || merged.default_tier || (tiers.fast ? "fast" : Object.keys(tiers)[0]!);
  if (!tiers[defaultTier]) {
    const where = fromEnv ? "SPARK_TIER" : "default_tier";
    throw new SparkError("invalid_request", `${where} '${defaultTier}' is not declared under [tiers].`);
  }
  const delegateTier = merged.delegate_tier ?? (tiers.deep ? "deep" : null);
  if (delegateTier && !tiers[delegateTier]) {
    throw new SparkError("invalid_request", `delegate_tier '${delegateTier}' is not declared under [tiers].`);
  }
  const mcpServers: Record<string, McpServerConfig> = {};
  for (const [name, server] of Object.entries(merged.mcp_servers ?? {})) {
    mcpServers[name] = { ...server, source: project?.config.mcp_servers?.[name] ? "project" : "user" };
  }
  return {
    defaultTier,
    delegateTier,
    tiers,
    ...(merged.sandbox ? { sandbox: merged.sandbox } : {}),
    ...(merged.limits ? { limits: merged.limits } : {}),
    ...(Object.keys(mcpServers).length > 0 ? { mcpServers } : {}),
    ...(merged.diagnostics?.enabled === false ? { diagnostics: false } : {}),
    sources,
    ignored,
  };
}

/**
 * The config as it applies with a remote model (`--server`): the server has models of its own, so
 * the tiers are not used, and a project's held-back tier settings (`tiers.*`, `default_tier`,
 * `delegate_tier`) are no longer a reason to ask for trust. Its MCP servers, sandbox and limits
 * apply as always.
 */
export function withoutTierSettings(config: LoadedConfig): LoadedConfig {
  if (!config.ignored) return config;
  const settings = config.ignored.settings.filter((setting) => !TIER_SETTING.test(setting.path));
  return { ...config, ignored: settings.length > 0 ? { ...config.ignored, settings } : null };
}

const TIER_SETTING = /^(tiers(\.|$)|default_tier$|delegate_tier$)/;

/**
 * What every face says about ignored project settings: the file, each setting and why, and how
 * to trust the project.
 */
export function describeIgnoredSettings(ignored: IgnoredProjectSettings): string {
  const why = ignored.changed ? "changed since you trusted it" : "not trusted";
  return (
    `${ignored.file} is ${why}; these settings are ignored:\n` +
    ignored.settings.map((setting) => `  ${setting.path}: ${setting.reason}\n`).join("") +
    `Read the file, then run \`spark trust\` in ${ignored.root} to use them.`
  );
}

async function readConfigFile(
  file: string,
  options: LoadConfigOptions,
): Promise<{ text: string; config: SparkConfig } | null> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    // Settings the person wrote must not be dropped without a word.
    throw new SparkError("invalid_request", `${file} could not be read: ${(error as Error).message}`, {
      cause: error,
    });
  }
  let parsed: unknown;
  try {
    parsed = (options.parseToml ?? parseTomlText)(text);
  } catch (error) {
    throw new SparkError("invalid_request", `${file} is not valid TOML: ${(error as Error).message}`);
  }
  try {
    return { text, config: validate(sparkConfigSchema, parsed) };
  } catch (error) {
    throw new SparkError("invalid_request", `${file}: ${(error as Error).message}`);
  }
}

/** The admission limits of each tier that sets any, in the scheduler's terms. */
export function tierAdmission(config: ResolvedConfig): Record<string, AdmissionLimits> {
  const limits: Record<string, AdmissionLimits> = {};
  for (const [name, tier] of Object.entries(config.tiers)) {
    const a = tier.admission;
    if (!a) continue;
    limits[name] = {
      ...(a.max_concurrent !== undefined ? { maxConcurrent: a.max_concurrent } : {}),
      ...(a.max_queue !== undefined ? { maxQueue: a.max_queue } : {}),
      ...(a.queue_timeout_ms !== undefined ? { queueTimeoutMs: a.queue_timeout_ms } : {}),
      ...(a.requests_per_minute !== undefined ? { requestsPerMinute: a.requests_per_minute } : {}),
      ...(a.tokens_per_minute !== undefined ? { tokensPerMinute: a.tokens_per_minute } : {}),
    };
  }
  return limits;
}

export function mergeConfig(base: SparkConfig, over: SparkConfig): SparkConfig {
  const tiers = { ...base.tiers };
  for (const [name, tier] of Object.entries(over.tiers ?? {})) tiers[name] = { ...tiers[name], ...tier };
  return {
    ...base,
    ...over,
    tiers,
    ...(base.limits || over.limits ? { limits: { ...base.limits, ...over.limits } } : {}),
    // A server is replaced whole: half of one config's server and half of another's is neither.
    ...(base.mcp_servers || over.mcp_servers
      ? { mcp_servers: { ...base.mcp_servers, ...over.mcp_servers } }
      : {}),
  };
}
