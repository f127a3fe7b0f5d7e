import type { ResolvedConfig } from "../config/spark-config.js";

/**
 * The tier the session starts on, as chooseTiers (runtime/tier-engines.ts) picks it without
 * importing the engine: `--model` naming a tier, else the default tier (a GGUF path given to
 * `--model` runs on it). Every face names a model by its tier: the thread, `/model`, the web app.
 */
export function startingTier(
  flags: { model?: string | undefined },
  config: Pick<ResolvedConfig, "defaultTier" | "tiers">,
): string {
  return flags.model && config.tiers[flags.model] ? flags.model : config.defaultTier;
}
