import { settingsNeedingTrust } from "./project-trust-table.js";
import type { SparkConfig } from "./spark-config-schema.js";

/** A setting of a project's config that was not applied, and why. */
export interface IgnoredSetting {
  /** Where it is in the file: `tiers.deep.url`, `tiers.deep`, `default_tier`, `limits.store_mb`. */
  path: string;
  /** What it would have done: `sends requests to http://...`. */
  reason: string;
}

/**
 * A project's config without the settings that need the user's trust (PROJECT_TRUST_TABLE says
 * which), and those settings. Each is left out where it is, with these exceptions: a tier only the
 * project declares is dropped whole (without its URL or key it is not the tier it claims to be),
 * and so is a `default_tier` / `delegate_tier` naming a dropped tier; an MCP server is left out
 * whole (a user's server of the same name stays as the user declared it).
 */
export function withoutUntrustedSettings(
  project: SparkConfig,
  user: SparkConfig,
): { config: SparkConfig; ignored: IgnoredSetting[] } {
  const config = structuredClone(project);
  const ignored: IgnoredSetting[] = [];
  const droppedTiers = new Map<string, string[]>();
  for (const { path, reason } of settingsNeedingTrust(project, user)) {
    const [section, name] = path;
    if (section === "tiers" && name !== undefined && !user.tiers?.[name]) {
      droppedTiers.set(name, [...(droppedTiers.get(name) ?? []), reason]);
      if (droppedTiers.get(name)!.length === 1) ignored.push({ path: `tiers.${name}`, reason: "" });
      continue;
    }
    removeAt(config, path);
    ignored.push({ path: path.join("."), reason });
  }
  for (const [name, reasons] of droppedTiers) {
    delete config.tiers![name];
    ignored.find((setting) => setting.path === `tiers.${name}`)!.reason = reasons.join("; ");
  }
  for (const key of ["default_tier", "delegate_tier"] as const) {
    const named = project[key];
    if (named && droppedTiers.has(named)) {
      delete config[key];
      ignored.push({ path: key, reason: `names the tier '${named}', which is held back` });
    }
  }
  return { config, ignored };
}

/** Deletes the value at `path`, and each table it leaves empty (an empty `[limits]` is no limits). */
function removeAt(root: object, path: readonly string[]): void {
  const parents: Record<string, unknown>[] = [root as Record<string, unknown>];
  for (const key of path.slice(0, -1)) parents.push(parents.at(-1)![key] as Record<string, unknown>);
  delete parents.at(-1)![path.at(-1)!];
  for (let depth = parents.length - 1; depth > 0; depth--) {
    if (Object.keys(parents[depth]!).length > 0) break;
    delete parents[depth - 1]![path[depth - 1]!];
  }
}
