import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SparkError } from "../protocol/errors.js";
import {
  cachedPath,
  listCachedModels,
  modelCacheDir,
  partialPath,
  removeCachedModel,
} from "./model-cache.js";

let cacheDir: string;
beforeEach(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "spark-cache-"));
});
afterEach(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

async function put(path: string, bytes: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, Buffer.alloc(bytes));
}

describe("modelCacheDir", () => {
  it("follows SPARK_MODELS_DIR, SPARK_HOME, XDG_CACHE_HOME, then ~/.cache", () => {
    const all = { SPARK_MODELS_DIR: "/m", SPARK_HOME: "/s", XDG_CACHE_HOME: "/x" };
    expect(modelCacheDir({ env: all })).toBe("/m");
    expect(modelCacheDir({ env: { ...all, SPARK_MODELS_DIR: "" } })).toBe(join("/s", "models"));
    expect(modelCacheDir({ env: { XDG_CACHE_HOME: "/x" } })).toBe(join("/x", "spark", "models"));
    expect(modelCacheDir({ env: {} })).toBe(join(homedir(), ".cache", "spark", "models"));
    expect(modelCacheDir({ cacheDir: "/explicit", env: all })).toBe("/explicit");
  });
});

describe("cache layout", () => {
  it("places models at <cache>/hf/<owner>/<repo>/<revision>/<file>", () => {
    expect(cachedPath("hf:o/r/sub/f.gguf@v2", { cacheDir })).toBe(
      join(cacheDir, "hf", "o", "r", "v2", "sub", "f.gguf"),
    );
    expect(cachedPath("hf:o/r/f.gguf", { cacheDir })).toBe(join(cacheDir, "hf", "o", "r", "main", "f.gguf"));
  });

  it("lists complete models only, sorted, with size and mtime", async () => {
    await put(cachedPath("hf:b/r/f.gguf", { cacheDir }), 10);
    await put(cachedPath("hf:a/r/sub/g.gguf@v1", { cacheDir }), 20);
    await put(partialPath(cachedPath("hf:c/r/partial.gguf", { cacheDir })), 5);
    await put(join(cacheDir, "hf", "a", "r", "main", "README.md"), 1);
    const models = await listCachedModels({ cacheDir });
    expect(models.map((m) => [m.uri, m.bytes])).toEqual([
      ["hf:a/r/sub/g.gguf@v1", 20],
      ["hf:b/r/f.gguf", 10],
    ]);
    expect(models[0]?.path).toBe(cachedPath("hf:a/r/sub/g.gguf@v1", { cacheDir }));
    expect(models[0]?.mtime).toBeInstanceOf(Date);
  });

  it("lists nothing for a missing cache directory", async () => {
    expect(await listCachedModels({ cacheDir: join(cacheDir, "nope") })).toEqual([]);
  });

  it("removes a model and its partial download, pruning empty directories", async () => {
    const path = cachedPath("hf:o/r/sub/f.gguf", { cacheDir });
    await put(path, 10);
    await put(partialPath(path), 3);
    await put(cachedPath("hf:o/other/f.gguf", { cacheDir }), 10);
    expect(await removeCachedModel("hf:o/r/sub/f.gguf", { cacheDir })).toEqual([path, partialPath(path)]);
    expect(existsSync(join(cacheDir, "hf", "o", "r"))).toBe(false);
    expect(existsSync(join(cacheDir, "hf", "o", "other"))).toBe(true);
    expect((await listCachedModels({ cacheDir })).map((m) => m.uri)).toEqual(["hf:o/other/f.gguf"]);
  });

  it("says when the model to remove is not cached", async () => {
    const error = await removeCachedModel("hf:o/r/f.gguf", { cacheDir }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SparkError);
    expect((error as SparkError).code).toBe("not_found");
    expect((error as SparkError).message).toContain("spark models list");
  });
});
