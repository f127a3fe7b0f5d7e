import { z } from "zod";
import type { Engine } from "../engine/engine.js";
import { ScriptedEngine, type ScriptedEngineOptions } from "../engine/scripted/scripted-engine.js";
import { SparkError } from "../protocol/errors.js";
import { loadScriptFile } from "./scripted-script.js";
import { loadTierEngine, type TierLoader } from "./tier-engines.js";

/**
 * For testing only: `SPARK_TEST_ENGINE` puts the scripted engine (src/engine/scripted) in place of
 * the model `spark serve` serves and the one `spark` / `spark exec` start on, so end-to-end tests
 * drive the real binary without a model. Its value is a JSON object, `{}` for the echo engine:
 * `script`, a script file (see scripted-script.ts); `tokens_per_second`, its pace (0: flat out).
 */
export const TEST_ENGINE_VARIABLE = "SPARK_TEST_ENGINE";

const testEngineSchema = z
  .object({
    script: z.string().min(1).optional(),
    tokens_per_second: z.number().int().min(0).max(10_000_000).optional(),
  })
  .strict();

/**
 * The scripted engine's options `SPARK_TEST_ENGINE` asks for; null when it is unset. The one reader
 * of the variable. Throws `invalid_request` for a value that is not such an object, or a script
 * that cannot be read.
 */
export function testEngineOptions(env: NodeJS.ProcessEnv = process.env): ScriptedEngineOptions | null {
  const value = env[TEST_ENGINE_VARIABLE];
  if (value === undefined || value === "") return null;
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch {
    raw = undefined;
  }
  const parsed = testEngineSchema.safeParse(raw);
  if (!parsed.success) {
    throw new SparkError(
      "invalid_request",
      `${TEST_ENGINE_VARIABLE} is not a JSON object of "script" (a file) and "tokens_per_second": ${value}`,
    );
  }
  const { script, tokens_per_second: tokensPerSecond } = parsed.data;
  return {
    ...(script === undefined ? {} : { script: loadScriptFile(script) }),
    ...(tokensPerSecond === undefined ? {} : { tokensPerSecond }),
  };
}

/**
 * Loads the tiers named in `byName` (`*`: every tier) as scripted engines with those options, named
 * after their tier, and every other tier as its config says: the test double of a tier's model.
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

/** With SPARK_TEST_ENGINE set, the loader that makes `defaultTier` the scripted engine it asks for. */
export function testEngineLoader(
  defaultTier: string,
  env: NodeJS.ProcessEnv = process.env,
): TierLoader | undefined {
  const options = testEngineOptions(env);
  return options ? scriptedTiers({ [defaultTier]: options }) : undefined;
}

/** The environment that asks a `spark` child process for the scripted engine (tests). */
export function testEngineEnv(
  options: { script?: string; tokensPerSecond?: number } = {},
): NodeJS.ProcessEnv {
  const value = {
    ...(options.script === undefined ? {} : { script: options.script }),
    ...(options.tokensPerSecond === undefined ? {} : { tokens_per_second: options.tokensPerSecond }),
  };
  return { [TEST_ENGINE_VARIABLE]: JSON.stringify(value) };
}
