import type { Dirent } from "node:fs";
import { readdir, rmdir, stat, unlink } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import { SparkError } from "../protocol/errors.js";
import { formatHfUri, type HfModelRef, parseHfUri } from "./model-uri.js";

/**
 * The on-disk model cache. Layout: `<cache>/hf/<owner>/<repo>/<revision>/<path/to/file.gguf>`.
 * A download in progress (or interrupted, waiting to be resumed) lives next to its target as
 * `<file>.gguf.part` and is never listed as a model.
 */

export interface ModelCacheOptions {
  /** Cache root; overrides the environment. */
  cacheDir?: string;
  /** Environment to read `SPARK_MODELS_DIR`, `SPARK_HOME`, `XDG_CACHE_HOME` from. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
}

export interface CachedModel {
  /** Canonical `hf:` URI. */
  uri: string;
  /** Absolute path of the GGUF file. */
  path: string;
  bytes: number;
  mtime: Date;
}

export const PART_SUFFIX = ".part";

function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
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

function toRef(uri: string | HfModelRef): HfModelRef {
  return typeof uri === "string" ? parseHfUri(uri) : uri;
}

/** Where the model lives in the cache (whether or not it has been downloaded). */
export function cachedPath(uri: string | HfModelRef, options: ModelCacheOptions = {}): string {
  const ref = toRef(uri);
  return join(modelCacheDir(options), "hf", ref.owner, ref.repo, ref.revision, ...ref.file.split("/"));
}

/** Where an unfinished download of `finalPath` is kept. */
export function partialPath(finalPath: string): string {
  return finalPath + PART_SUFFIX;
}

async function fileSize(path: string): Promise<{ bytes: number; mtime: Date } | null> {
  try {
    const stats = await stat(path);
    return stats.isFile() ? { bytes: stats.size, mtime: stats.mtime } : null;
  } catch {
    return null;
  }
}

/** The cached model, or null when it has not been (completely) downloaded. */
export async function findCachedModel(
  uri: string | HfModelRef,
  options: ModelCacheOptions = {},
): Promise<CachedModel | null> {
  const ref = toRef(uri);
  const path = cachedPath(ref, options);
  const found = await fileSize(path);
  return found === null ? null : { uri: ref.uri, path, ...found };
}

async function entries(dir: string): Promise<Dirent[]> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

async function* walkFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await entries(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walkFiles(path);
    else if (entry.isFile()) yield path;
  }
}

/** Every completely downloaded model in the cache, sorted by URI. Partial downloads are skipped. */
export async function listCachedModels(options: ModelCacheOptions = {}): Promise<CachedModel[]> {
  const hfRoot = join(modelCacheDir(options), "hf");
  const models: CachedModel[] = [];
  for (const owner of await entries(hfRoot)) {
    if (!owner.isDirectory()) continue;
    for (const repo of await entries(join(hfRoot, owner.name))) {
      if (!repo.isDirectory()) continue;
      for (const revision of await entries(join(hfRoot, owner.name, repo.name))) {
        if (!revision.isDirectory()) continue;
        const revisionDir = join(hfRoot, owner.name, repo.name, revision.name);
        for await (const path of walkFiles(revisionDir)) {
          if (!path.toLowerCase().endsWith(".gguf")) continue; // skips *.part and stray files
          const file = relative(revisionDir, path).split(sep).join("/");
          const uri = formatHfUri({ owner: owner.name, repo: repo.name, file, revision: revision.name });
          try {
            parseHfUri(uri); // ignore files a URI could not name
          } catch {
            continue;
          }
          const found = await fileSize(path);
          if (found !== null) models.push({ uri, path, ...found });
        }
      }
    }
  }
  return models.sort((a, b) => a.uri.localeCompare(b.uri));
}

/** Removes the empty directories left above a model file, up to (not including) `<cache>/hf`. */
export async function pruneEmptyDirs(modelPath: string, options: ModelCacheOptions = {}): Promise<void> {
  const stop = join(modelCacheDir(options), "hf");
  let current = dirname(modelPath);
  while (current !== stop && current.startsWith(stop + sep)) {
    try {
      await rmdir(current);
    } catch {
      return; // not empty, or already gone
    }
    current = dirname(current);
  }
}

async function removeIfExists(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/**
 * Deletes a cached model and any partial download of it, then prunes empty directories.
 * Returns the paths removed; throws `not_found` when neither exists.
 */
export async function removeCachedModel(
  uri: string | HfModelRef,
  options: ModelCacheOptions = {},
): Promise<string[]> {
  const ref = toRef(uri);
  const path = cachedPath(ref, options);
  const removed: string[] = [];
  for (const candidate of [path, partialPath(path)]) {
    if (await removeIfExists(candidate)) removed.push(candidate);
  }
  if (removed.length === 0) {
    throw new SparkError(
      "not_found",
      `Model ${ref.uri} is not in the cache (${modelCacheDir(options)}). Run "spark models list" to see cached models.`,
      { param: "model" },
    );
  }
  await pruneEmptyDirs(path, options);
  return removed;
}
