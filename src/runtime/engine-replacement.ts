import type { TierConfig } from "../config/spark-config.js";
import type { Engine } from "../engine/engine.js";

/** Engines an embedding entry point puts in place of the ones the flags and config ask for. */
export interface EngineReplacement {
  /** The one model `spark serve` serves, whatever its flags and config name. */
  served(): Promise<Engine>;
  /**
   * The engine of `name`, the tier `spark` and `spark exec` start on (its id is `name`); the other
   * tiers load as their config says.
   */
  startingTier(name: string, tier: TierConfig): Promise<Engine>;
}

let replacement: EngineReplacement | undefined;

/**
 * For entry points that run Spark's commands with an engine of their own (the test entry point,
 * src/cli/test-support/spark-test-bin.ts): from now on every `spark serve` and agent runtime of this
 * process takes its engine from `engines`. The shipped bin/spark.js never calls it. Undefined
 * restores the flags' and config's engines.
 */
export function replaceEngines(engines: EngineReplacement | undefined): void {
  replacement = engines;
}

/** The replacement {@link replaceEngines} set, if any. */
export function engineReplacement(): EngineReplacement | undefined {
  return replacement;
}
