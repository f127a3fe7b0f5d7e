import type { Engine } from "../../engine/engine.js";
import { ScriptedEngine, type ScriptedEngineOptions } from "../../engine/scripted/scripted-engine.js";
import { loadTierEngine, type TierLoader } from "../tier-engines.js";

/**
 * Loads the tiers named in `byName` (`*`: every tier) as scripted engines with those options, named
 * after their tier, and every other tier as its config says: the test double of a tier's model,
 * passed to an in-process runtime as its `loadTier`.
 */
export function scriptedTiers(byName: Record<string, ScriptedEngineOptions>): TierLoader {
  return async (name, tier, options): Promise<Engine> => {
    const scripted = byName[name] ?? byName["*"];
    if (!scripted) return loadTierEngine(name, tier, options);
    return new ScriptedEngine({
      ...scripted,
      id: name,
      ...(tier.context ? { contextSize: tier.context } : {}),
    });
  };
}
