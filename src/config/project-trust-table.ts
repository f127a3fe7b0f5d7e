import { UPSTREAM_TIMEOUT_DEFAULTS } from "../engine/upstream/upstream-engine.js";
import { SANDBOX_MODES, type SandboxMode } from "../protocol/agent.js";
import { mcpServerReason } from "./mcp-servers-config.js";
import type { SparkConfig } from "./spark-config-schema.js";

type Tier = NonNullable<SparkConfig["tiers"]>[string];
type Engine = NonNullable<Tier["engine"]>;

/** Where a project's value sits, with the configs it is judged against. */
export interface TrustSite {
  /** `["tiers", "deep", "url"]`, `["limits", "max_tool_rounds"]`. */
  path: readonly string[];
  project: SparkConfig;
  /** The user's own config (always trusted). */
  user: SparkConfig;
}

/** What the value would do that needs the user's trust, in words; null: it is safe without trust. */
export type TrustRule = (value: never, site: TrustSite) => string | null;

/**
 * How a project's setting is judged: `"safe"` (it and everything under it applies without trust),
 * a rule (it and everything under it, judged as one value), `fields` (each field by its own entry;
 * a field with no entry is a bug the table's test catches), `each` (every entry of a table, or
 * every field of a section, by the same entry).
 */
export type TrustEntry = "safe" | TrustRule | { fields: Record<string, TrustEntry> } | { each: TrustEntry };

/**
 * The most a project may ask of the local engine without trust: the context the engine takes by
 * default at most (its model's training context, capped at 32768), and a few conversations at once
 * (`--parallel` defaults to 2). More could exhaust the machine's memory.
 */
export const UNTRUSTED_ENGINE_LIMITS = { context: 32768, parallel: 4 } as const;

/** A model reference that is fetched from somewhere rather than read from a local file. */
function isRemoteModel(model: string): boolean {
  return /^hf:/i.test(model) || /^[a-z][a-z0-9+.-]*:\/\//i.test(model);
}

function userTier(site: TrustSite): Tier | undefined {
  return site.user.tiers?.[site.path[1]!];
}

/**
 * The engine the tier runs on while the project is untrusted: on a tier the user declares, the
 * user's (a project's other engine is held back, so its fields are judged by the engine they
 * would really reach); on a project-only tier, the project's (held back whole if it needs trust).
 */
function untrustedEngine(site: TrustSite): Engine {
  const user = userTier(site);
  if (user) return user.engine ?? "llama";
  return site.project.tiers?.[site.path[1]!]?.engine ?? "llama";
}

/** What loading `model` does beyond tuning: only the embedded engine opens or fetches a file. */
function modelRule(role: string) {
  return (model: string, site: TrustSite) => {
    if (untrustedEngine(site) !== "llama") return null;
    return isRemoteModel(model) ? `downloads ${model}` : `loads the local file ${model} ${role}`;
  };
}

/** A wait longer than the user's (or the default) keeps a stalled request, and its memory, longer. */
function timeoutRule(field: "first_chunk_timeout_ms" | "idle_timeout_ms", fallback: number) {
  return (ms: number, site: TrustSite) => {
    const bound = userTier(site)?.[field] ?? fallback;
    return ms > bound ? `waits up to ${ms} ms (over ${bound} needs trust)` : null;
  };
}

const engineReasons: Record<Engine, string> = {
  upstream: "an upstream engine sends prompts over the network",
  llama: "runs the embedded engine in place of the tier's own",
};

/**
 * Every field of a tier. A project may only tune the embedded engine within bounds: the rest sends
 * data off the machine, fetches or opens files, takes memory, or changes which engine answers.
 */
const tierFields = {
  // A project may restate the engine, not choose it.
  engine: (engine: Engine, site: TrustSite) =>
    engine === (userTier(site)?.engine ?? "llama") ? null : engineReasons[engine],
  url: (url: string | string[]) => `sends requests to ${typeof url === "string" ? url : url.join(", ")}`,
  api_key_env: (name: string) => `sends the value of $${name} as a credential`,
  model: modelRule("as the model"),
  draft_model: modelRule("as a draft model"),
  context: (tokens: number) =>
    tokens > UNTRUSTED_ENGINE_LIMITS.context
      ? `takes ${tokens} tokens of context (over ${UNTRUSTED_ENGINE_LIMITS.context} needs trust)`
      : null,
  parallel: (count: number) =>
    count > UNTRUSTED_ENGINE_LIMITS.parallel
      ? `decodes ${count} conversations at once (over ${UNTRUSTED_ENGINE_LIMITS.parallel} needs trust)`
      : null,
  // Without admission limits a tier admits everything: a project's only add limits, unless they
  // would replace the user's (a tier's admission merges whole).
  admission: (_admission: unknown, site: TrustSite) =>
    userTier(site)?.admission ? "replaces your tier's admission limits" : null,
  first_chunk_timeout_ms: timeoutRule(
    "first_chunk_timeout_ms",
    UPSTREAM_TIMEOUT_DEFAULTS.firstChunkTimeoutMs,
  ),
  idle_timeout_ms: timeoutRule("idle_timeout_ms", UPSTREAM_TIMEOUT_DEFAULTS.idleTimeoutMs),
} satisfies { [K in keyof Tier]-?: TrustEntry };

/** SANDBOX_MODES runs from the strictest to the loosest. */
function looser(mode: SandboxMode, than: SandboxMode): boolean {
  return SANDBOX_MODES.indexOf(mode) > SANDBOX_MODES.indexOf(than);
}

/**
 * Every key of a project's `.spark/config.toml`, classified: what applies without trust and what
 * waits for `spark trust`. The one place the rule lives: the loader (untrusted-settings.ts) applies
 * it, and project-trust-table.test.ts walks the config's schema and fails on a key this table does
 * not classify. A new key gets its line here.
 */
export const PROJECT_TRUST_TABLE = {
  fields: {
    // Names a tier; one naming a tier held back is held back with it (untrusted-settings.ts).
    default_tier: "safe",
    delegate_tier: "safe",
    tiers: { each: { fields: tierFields } },
    sandbox: (mode: SandboxMode, site: TrustSite) => {
      const own = site.user.sandbox ?? "workspace-write";
      return looser(mode, own) ? `loosens the command sandbox to "${mode}" (from "${own}")` : null;
    },
    // Spark's memory, connection and work limits are the user's to set, whichever way: every key of
    // the section, present and future, needs trust.
    limits: {
      each: (value: number) => `sets this limit to ${value} (a project's limits apply only once trusted)`,
    },
    // When a session's older turns are summarised: no data leaves, nothing runs.
    compact_at: "safe",
    // A project's MCP server starts a program or reaches a URL with the workspace's data.
    mcp_servers: { each: (server: Parameters<typeof mcpServerReason>[0]) => mcpServerReason(server) },
    diagnostics: {
      fields: {
        // Off is always safe; on starts language servers the user turned off.
        enabled: (on: boolean, site: TrustSite) =>
          on && site.user.diagnostics?.enabled === false
            ? "starts the language servers you turned off"
            : null,
      },
    },
  } satisfies { [K in keyof SparkConfig]-?: TrustEntry },
} as const satisfies TrustEntry;

/** One setting of a project's config that needs trust: where, and why. */
export interface TrustFinding {
  path: string[];
  reason: string;
}

/** The settings of `project` that need trust, in the order of the file, judged by `table`. */
export function settingsNeedingTrust(
  project: SparkConfig,
  user: SparkConfig,
  table: TrustEntry = PROJECT_TRUST_TABLE,
): TrustFinding[] {
  const findings: TrustFinding[] = [];
  const visit = (entry: TrustEntry, value: unknown, path: string[]) => {
    if (value === undefined || entry === "safe") return;
    if (typeof entry === "function") {
      const reason = (entry as (value: unknown, site: TrustSite) => string | null)(value, {
        path,
        project,
        user,
      });
      if (reason) findings.push({ path, reason });
      return;
    }
    const fields = value as Record<string, unknown>;
    for (const key of Object.keys(fields)) {
      const child = "each" in entry ? entry.each : entry.fields[key];
      // The schema refuses unknown keys before this; an unclassified one needs trust, never less.
      if (child === undefined) findings.push({ path: [...path, key], reason: "is not classified" });
      else visit(child, fields[key], [...path, key]);
    }
  };
  visit(table, project, []);
  return findings;
}

/** The entry classifying the setting at `path`; undefined when none does. */
export function trustEntryAt(
  path: readonly string[],
  table: TrustEntry = PROJECT_TRUST_TABLE,
): TrustEntry | undefined {
  let entry: TrustEntry | undefined = table;
  for (const key of path) {
    if (entry === undefined || entry === "safe" || typeof entry === "function") return entry;
    entry = "each" in entry ? entry.each : entry.fields[key];
  }
  return entry;
}
