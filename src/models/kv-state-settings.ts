import { join } from "node:path";
import { SparkError } from "../protocol/errors.js";
import { type ModelCacheOptions, modelCacheDir } from "./model-cache.js";

/** Where the embedded engine saves pre-warmed KV states, and how many bytes they may take. */
export interface KvStateSettings {
  dir: string;
  /** Default: the engine's (2 GiB). */
  maxBytes?: number;
}

const UNITS: Record<string, number> = { "": 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 };

/** The saved KV states' folder: `<model cache>/kv-states` (see `modelCacheDir`). */
export function kvStateCacheDir(options: ModelCacheOptions = {}): string {
  return join(modelCacheDir(options), "kv-states");
}

/**
 * The KV state cache's settings from `$SPARK_KV_CACHE_BYTES` (bytes, or with a K, M or G suffix for
 * KiB, MiB, GiB): undefined when it is 0, which turns saving and restoring off. Any other value is
 * refused with `invalid_request`.
 */
export function kvStateSettings(options: ModelCacheOptions = {}): KvStateSettings | undefined {
  const dir = kvStateCacheDir(options);
  const raw = (options.env ?? process.env).SPARK_KV_CACHE_BYTES?.trim();
  if (raw === undefined || raw === "") return { dir };
  const match = /^(\d{1,15})([KMG]?)$/i.exec(raw);
  if (!match) {
    throw new SparkError(
      "invalid_request",
      `SPARK_KV_CACHE_BYTES must be a whole number of bytes, optionally with a K, M or G suffix ` +
        `(0 turns the KV state cache off); got "${raw}".`,
      { param: "SPARK_KV_CACHE_BYTES" },
    );
  }
  const maxBytes = Number(match[1]) * UNITS[match[2]!.toUpperCase()]!;
  return maxBytes === 0 ? undefined : { dir, maxBytes };
}
