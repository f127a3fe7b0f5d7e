import { SparkError } from "../protocol/errors.js";
import { offlineHint } from "./hub-files.js";
import { findCachedModel, modelCacheDir } from "./model-cache.js";
import { type DownloadModelOptions, downloadModel } from "./model-download.js";
import { DEFAULT_MODEL, parseModelSpec } from "./model-uri.js";

export interface ResolvedModel {
  /** Absolute path of the GGUF file to load (the first part of a split model). */
  path: string;
  /** The canonical `hf:` URI, or the absolute path for a local file. */
  uri: string;
  source: "local" | "cache" | "download";
}

export interface ResolveModelOptions extends DownloadModelOptions {
  /**
   * Download an `hf:` model that is not cached yet. Default: true, unless `$SPARK_OFFLINE` or
   * `$HF_HUB_OFFLINE` is set to a true value (`1`, `true`, `yes`, `on`).
   */
  download?: boolean;
  /** Relative local paths resolve against this directory. Default: `process.cwd()`. */
  cwd?: string;
}

function truthy(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

/** Whether the environment asks Spark not to touch the network. */
export function offlineFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  return truthy(env.SPARK_OFFLINE) || truthy(env.HF_HUB_OFFLINE);
}

/**
 * Turns a `--model` value into a GGUF path: no spec means {@link DEFAULT_MODEL}; a local path is
 * checked and returned as is; an `hf:` URI comes from the cache, or is downloaded into it.
 */
export async function resolveModel(
  spec: string | undefined,
  options: ResolveModelOptions = {},
): Promise<ResolvedModel> {
  const effective = spec === undefined || spec.trim() === "" ? DEFAULT_MODEL : spec;
  const ref = parseModelSpec(effective, options.cwd === undefined ? {} : { cwd: options.cwd });
  if (ref.kind === "local") return { path: ref.path, uri: ref.path, source: "local" };

  const cached = await findCachedModel(ref, options);
  if (cached !== null) return { path: cached.path, uri: ref.uri, source: "cache" };

  const download = options.download ?? !offlineFromEnv(options.env ?? process.env);
  if (!download) {
    throw new SparkError(
      "model_unavailable",
      `Model ${ref.uri} is not in the cache and downloads are disabled (offline).\n` +
        offlineHint(modelCacheDir(options)),
      { param: "model" },
    );
  }
  const result = await downloadModel(ref, options);
  return { path: result.path, uri: ref.uri, source: result.alreadyCached ? "cache" : "download" };
}
