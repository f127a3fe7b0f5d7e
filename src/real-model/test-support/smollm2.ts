import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** The command that fetches SmolLM2 (scripts/fetch-smollm2.mjs; `.ci/run` runs it). */
export const FETCH_SMOLLM2 = "npm run fetch:smollm2";

/**
 * SmolLM2-135M-Instruct (Q4_1) where scripts/fetch-smollm2.mjs unpacks it, or undefined when it has
 * not been fetched. The script writes the file only once its sha256 matched, so present means
 * verified.
 */
export function smollm2Path(): string | undefined {
  const dir = process.env.SPARK_TEST_MODELS_DIR || path.join(os.homedir(), ".cache", "spark", "test-models");
  const file = path.join(dir, "SmolLM2-135M-Instruct.Q4_1.gguf");
  return existsSync(file) ? file : undefined;
}
