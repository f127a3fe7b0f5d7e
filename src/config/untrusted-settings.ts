import { SANDBOX_MODES, type SandboxMode } from "../protocol/agent.js";
import { mcpServerReason } from "./mcp-servers-config.js";
import type { SparkConfig } from "./spark-config.js";

/** A setting of a project's config that was not applied, and why. */
export interface IgnoredSetting {
  /** Where it is in the file: `tiers.deep.url`, `tiers.deep`, `default_tier`. */
  path: string;
  /** What it would have done: `sends requests to http://...`. */
  reason: string;
}

type Tier = NonNullable<SparkConfig["tiers"]>[string];

/** A model reference that is fetched from somewhere rather than read from a local file. */
function isRemoteModel(model: string): boolean {
  return /^hf:/i.test(model) || /^[a-z][a-z0-9+.-]*:\/\//i.test(model);
}

/**
 * The most a project may ask of the local engine without trust: the context the engine takes by
 * default at most (its model's training context, capped at 32768), and a few conversations at once
 * (`--parallel` defaults to 2). More could exhaust the machine's memory.
 */
export const UNTRUSTED_ENGINE_LIMITS = { context: 32768, parallel: 4 } as const;

type Engine = NonNullable<Tier["engine"]>;

/** What loading `model` on `engine` does beyond tuning: only the embedded engine opens or fetches a file. */
function modelReason(model: string, engine: Engine, role: string): string | null {
  if (engine !== "llama") return null;
  return isRemoteModel(model) ? `downloads ${model}` : `loads the local file ${model} ${role}`;
}

/**
 * What each field of a tier would send off the machine, fetch onto it, read from it or take of its
 * memory; null when it only tunes the local engine within bounds. `engine` is the tier's engine
 * once merged (the project's, else the user's tier's, else llama). This table is the whole rule: a
 * new field that does any of that gets a line here, and is then held back until trusted.
 */
const tierRules: {
  [K in keyof Tier]-?: (value: NonNullable<Tier[K]>, engine: Engine) => string | null;
} = {
  engine: (engine) => (engine === "upstream" ? "an upstream engine sends prompts over the network" : null),
  url: (url) => `sends requests to ${typeof url === "string" ? url : url.join(", ")}`,
  api_key_env: (name) => `sends the value of $${name} as a credential`,
  model: (model, engine) => modelReason(model, engine, "as the model"),
  draft_model: (model, engine) => modelReason(model, engine, "as a draft model"),
  context: (tokens) =>
    tokens > UNTRUSTED_ENGINE_LIMITS.context
      ? `takes ${tokens} tokens of context (over ${UNTRUSTED_ENGINE_LIMITS.context} needs trust)`
      : null,
  parallel: (count) =>
    count > UNTRUSTED_ENGINE_LIMITS.parallel
      ? `decodes ${count} conversations at once (over ${UNTRUSTED_ENGINE_LIMITS.parallel} needs trust)`
      : null,
  admission: () => null,
  first_chunk_timeout_ms: () => null,
  idle_timeout_ms: () => null,
};

function tierFindings(tier: Tier, userTier: Tier | undefined): { field: keyof Tier; reason: string }[] {
  const engine = tier.engine ?? userTier?.engine ?? "llama";
  const findings: { field: keyof Tier; reason: string }[] = [];
  for (const field of Object.keys(tier) as (keyof Tier)[]) {
    const value = tier[field];
    if (value === undefined) continue;
    const reason = (tierRules[field] as (value: unknown, engine: Engine) => string | null)(value, engine);
    if (reason) findings.push({ field, reason });
  }
  return findings;
}

/**
 * A project's config without the settings that need the user's trust, and those settings. A tier
 * the user's config also declares keeps the project's other fields; a tier only the project
 * declares is dropped whole (without its URL or key it is not the tier it claims to be), and so is
 * a `default_tier` / `delegate_tier` naming a dropped tier.
 */
export function withoutUntrustedSettings(
  project: SparkConfig,
  user: SparkConfig,
): { config: SparkConfig; ignored: IgnoredSetting[] } {
  const ignored: IgnoredSetting[] = [];
  const tiers: NonNullable<SparkConfig["tiers"]> = {};
  const dropped = new Set<string>();
  for (const [name, tier] of Object.entries(project.tiers ?? {})) {
    const findings = tierFindings(tier, user.tiers?.[name]);
    if (findings.length === 0) {
      tiers[name] = tier;
    } else if (user.tiers?.[name]) {
      const kept = { ...tier };
      for (const { field, reason } of findings) {
        delete kept[field];
        ignored.push({ path: `tiers.${name}.${field}`, reason });
      }
      tiers[name] = kept;
    } else {
      dropped.add(name);
      ignored.push({ path: `tiers.${name}`, reason: findings.map((f) => f.reason).join("; ") });
    }
  }
  const config: SparkConfig = { ...project, ...(project.tiers ? { tiers } : {}) };
  for (const key of ["default_tier", "delegate_tier"] as const) {
    const named = project[key];
    if (named && dropped.has(named)) {
      delete config[key];
      ignored.push({ path: key, reason: `names the tier '${named}', which is held back` });
    }
  }
  // A project's MCP server starts a program or reaches a URL with the workspace's data: every one
  // waits for trust, whole (a user's server of the same name stays as the user declared it).
  if (project.mcp_servers) {
    for (const [name, server] of Object.entries(project.mcp_servers)) {
      ignored.push({ path: `mcp_servers.${name}`, reason: mcpServerReason(server) });
    }
    delete config.mcp_servers;
  }
  if (project.sandbox && looser(project.sandbox, user.sandbox ?? "workspace-write")) {
    delete config.sandbox;
    ignored.push({
      path: "sandbox",
      reason: `loosens the command sandbox to "${project.sandbox}" (from "${user.sandbox ?? "workspace-write"}")`,
    });
  }
  return { config, ignored };
}

/** SANDBOX_MODES runs from the strictest to the loosest. */
function looser(mode: SandboxMode, than: SandboxMode): boolean {
  return SANDBOX_MODES.indexOf(mode) > SANDBOX_MODES.indexOf(than);
}
