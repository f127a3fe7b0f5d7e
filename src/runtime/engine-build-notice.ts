import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ComputeBackend } from "../engine/llama/backend-info.js";
import type { EngineBinary } from "../engine/llama/llama-engine.js";

export interface EngineBuildNoticeOptions {
  /** Where SPARK_ENGINE_CACHE is read. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Spark's package (or checkout) folder, where scripts/build-engine.mjs is. Default: this module's. */
  packageRoot?: string;
}

/**
 * The line said the first time a model runs on the CPU on node-llama-cpp's prebuilt binary (Spark's
 * install found no compiler, or ran with SPARK_ENGINE_BUILD=0): what it runs on, and how to get the
 * fast engine. Said once per machine: a marker in the engine build cache
 * (`${SPARK_ENGINE_CACHE:-~/.cache/spark/engine}`, where scripts/build-engine.mjs keeps its builds)
 * remembers it; `spark doctor` tells it again any time. Null otherwise.
 */
export function engineBuildNotice(
  binary: EngineBinary,
  backend: ComputeBackend,
  options: EngineBuildNoticeOptions = {},
): string | null {
  if (binary.build !== "prebuilt" || backend !== "cpu") return null;
  const env = options.env ?? process.env;
  const cache = env.SPARK_ENGINE_CACHE || path.join(os.homedir(), ".cache", "spark", "engine");
  const marker = path.join(cache, "prebuilt-notice-said");
  if (existsSync(marker)) return null;
  try {
    mkdirSync(cache, { recursive: true });
    writeFileSync(marker, "");
  } catch {
    // Unwritable: said again next time, which is better than never.
  }
  const root = options.packageRoot ?? fileURLToPath(new URL("../..", import.meta.url));
  const script = path.join(root, "scripts", "build-engine.mjs");
  return (
    "the model runs on node-llama-cpp's prebuilt binary: it works, without the native decode loop " +
    `that makes Spark's own build faster. For the fast engine, install cmake and a C++ compiler, then run: node "${script}"`
  );
}
