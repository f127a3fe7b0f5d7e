import { readFile, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parse as parseTomlText } from "smol-toml";
import type { SandboxMode } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import { validate } from "../protocol/validate.js";
import type { AdmissionLimits } from "../server/admission/admission-controller.js";
import type { McpServerConfig } from "./mcp-servers-config.js";
import { configDigest, projectConfigPath, projectTrustStatus } from "./project-trust.js";
import { type Limits, type SparkConfig, sparkConfigSchema, type TierConfig } from "./spark-config-schema.js";
import { type IgnoredSetting, withoutUntrustedSettings } from "./untrusted-settings.js";

export { type Limits, type SparkConfig, sparkConfigSchema, type TierConfig } from "./spark-config-schema.js";

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
  /** `compact_at`: the share of the context window past which older turns are compacted. Default (absent): 0.8. */
  compactAt?: number;
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
    ...(merged.compact_at !== undefined ? { compactAt: merged.compact_at } : {}),
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
