import { readdir, stat, unlink } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import { resolveModelFile } from "node-llama-cpp";
import { SparkError } from "../protocol/errors.js";
import { splitParts } from "./hub-files.js";
import { type HfModelRef, parseHfUri } from "./model-uri.js";

/**
 * The on-disk model cache, in node-llama-cpp's layout: one flat folder of files named after the URI
 * (`hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q8_0.gguf` is
 * `hf_Qwen_qwen2.5-coder-1.5b-instruct-q8_0.gguf`), every part of a split model beside the first.
 * A download in progress (or interrupted, waiting to be resumed) is `<file>.gguf.ipull`.
 */

export interface ModelCacheOptions {
  /** Cache root; overrides the environment. */
  cacheDir?: string | undefined;
  /** Environment to read `SPARK_MODELS_DIR`, `SPARK_HOME`, `XDG_CACHE_HOME` from. Default: `process.env`. */
  env?: NodeJS.ProcessEnv | undefined;
}

export interface CachedModel {
  /** The file name in the cache (the first part's, for a split model). */
  name: string;
  /** Absolute path of the file to load (the first part of a split model). */
  path: string;
  /** Every file of the model: the parts of a split model, in order. */
  files: string[];
  /** All files together. */
  bytes: number;
  mtime: Date;
  /** An unfinished download (`.ipull`), resumed by the next download of the same model. */
  partial: boolean;
}

const PARTIAL_SUFFIX = ".ipull";

/** An environment variable, with empty values treated as unset. */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/**
 * The cache root: `options.cacheDir`, else `$SPARK_MODELS_DIR`, else `$SPARK_HOME/models`, else
 * `$XDG_CACHE_HOME/spark/models`, else `~/.cache/spark/models`.
 */
export function modelCacheDir(options: ModelCacheOptions = {}): string {
  if (options.cacheDir !== undefined) return options.cacheDir;
  const env = options.env ?? process.env;
  const modelsDir = envValue(env, "SPARK_MODELS_DIR");
  if (modelsDir !== undefined) return modelsDir;
  const sparkHome = envValue(env, "SPARK_HOME");
  if (sparkHome !== undefined) return join(sparkHome, "models");
  const xdgCache = envValue(env, "XDG_CACHE_HOME");
  if (xdgCache !== undefined) return join(xdgCache, "spark", "models");
  return join(homedir(), ".cache", "spark", "models");
}

/** The model whose first file is `path`, or null when a file of it is missing. */
async function describe(path: string): Promise<CachedModel | null> {
  const partial = path.endsWith(PARTIAL_SUFFIX);
  const first = basename(path);
  const files = partial ? [path] : splitParts(first).map((name) => join(dirname(path), name));
  let bytes = 0;
  let mtime = new Date(0);
  for (const file of files) {
    const stats = await stat(file).catch(() => null);
    if (stats === null || !stats.isFile()) return null;
    bytes += stats.size;
    if (stats.mtime > mtime) mtime = stats.mtime;
  }
  return { name: first, path, files, bytes, mtime, partial };
}

/** The cached model for a URI (every part present), or null when it has not been downloaded. */
export async function findCachedModel(
  uri: string | HfModelRef,
  options: ModelCacheOptions = {},
): Promise<CachedModel | null> {
  const ref = typeof uri === "string" ? parseHfUri(uri) : uri;
  try {
    const path = await resolveModelFile(ref.uri, {
      directory: modelCacheDir(options),
      download: false,
      cli: false,
    });
    return await describe(path);
  } catch {
    return null; // not in the cache, or a part of it is missing
  }
}

/** Every model in the cache, complete ones and unfinished downloads, sorted by name. */
export async function listCachedModels(options: ModelCacheOptions = {}): Promise<CachedModel[]> {
  const dir = modelCacheDir(options);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const models: CachedModel[] = [];
  for (const entry of entries) {
    const name = entry.name.toLowerCase();
    if (!entry.isFile() || !(name.endsWith(".gguf") || name.endsWith(`.gguf${PARTIAL_SUFFIX}`))) continue;
    if (!name.endsWith(PARTIAL_SUFFIX) && splitParts(entry.name)[0] !== entry.name) continue; // a later part
    const model = await describe(join(dir, entry.name));
    if (model !== null) models.push(model);
  }
  return models.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Deletes a model from the cache, named by its `hf:` URI or by its name in `spark models list`
 * (an unfinished download too), with every part and any unfinished download of them. Throws
 * `not_found` when it is not there.
 */
export async function removeCachedModel(spec: string, options: ModelCacheOptions = {}): Promise<CachedModel> {
  const dir = modelCacheDir(options);
  const model = spec.startsWith("hf:")
    ? await findCachedModel(spec, options)
    : ((await listCachedModels(options)).find((m) => m.name === spec) ?? null);
  if (model === null) {
    throw new SparkError(
      "not_found",
      `Model ${spec} is not in the cache (${dir}). Run "spark models list" to see cached models.`,
      { param: "model" },
    );
  }
  for (const file of model.files) {
    for (const path of [file, file + PARTIAL_SUFFIX]) {
      await unlink(path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      });
    }
  }
  return model;
}
