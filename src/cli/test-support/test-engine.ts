import { z } from "zod";
import { ScriptedEngine, type ScriptedEngineOptions } from "../../engine/scripted/scripted-engine.js";
import { SparkError } from "../../protocol/errors.js";
import type { EngineReplacement } from "../../runtime/engine-replacement.js";
import { loadScriptFile } from "./scripted-script.js";

/**
 * For testing only, read by the test entry point (spark-test-bin.ts), never by bin/spark.js:
 * `SPARK_TEST_ENGINE` puts the scripted engine (src/engine/scripted) in place of the model
 * `spark serve` serves and the one `spark` / `spark exec` start on, so end-to-end tests drive the
 * binary without a model. Its value is a JSON object, `{}` for the echo engine: `script`, a script
 * file (see scripted-script.ts); `tokens_per_second`, its pace (0: flat out).
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
 * With `SPARK_TEST_ENGINE` set, the engines the test entry point puts in place of the models: the
 * scripted engine it asks for, served as `scripted` by `spark serve` and named after the tier a
 * runtime starts on. The variable is read when a command first needs its engine, so a bad value is
 * that command's error (`spark: SPARK_TEST_ENGINE is not ...`). Null when it is unset.
 */
export function testEngineReplacement(env: NodeJS.ProcessEnv = process.env): EngineReplacement | null {
  const value = env[TEST_ENGINE_VARIABLE];
  if (value === undefined || value === "") return null;
  return {
    served: async () => new ScriptedEngine(testEngineOptions(env)!),
    startingTier: async (name, tier) =>
      new ScriptedEngine({
        ...testEngineOptions(env)!,
        id: name,
        ...(tier.context ? { contextSize: tier.context } : {}),
      }),
  };
}

/** The environment that asks a `spark` child process started by the test entry point for the scripted engine. */
export function testEngineEnv(
  options: { script?: string; tokensPerSecond?: number } = {},
): NodeJS.ProcessEnv {
  const value = {
    ...(options.script === undefined ? {} : { script: options.script }),
    ...(options.tokensPerSecond === undefined ? {} : { tokens_per_second: options.tokensPerSecond }),
  };
  return { [TEST_ENGINE_VARIABLE]: JSON.stringify(value) };
}
