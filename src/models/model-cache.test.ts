import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SparkError } from "../protocol/errors.js";
import { findCachedModel, listCachedModels, modelCacheDir, removeCachedModel } from "./model-cache.js";

let cacheDir: string;
beforeEach(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), "spark-cache-"));
});
afterEach(async () => {
  await rm(cacheDir, { recursive: true, force: true });
});

async function put(name: string, bytes: number): Promise<string> {
  const path = join(cacheDir, name);
  await writeFile(path, Buffer.alloc(bytes));
  return path;
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

describe("the cache", () => {
  it("finds a model by URI under node-llama-cpp's file names, a split one only with every part", async () => {
    const file = await put("hf_Qwen_qwen2.5-coder-1.5b-instruct-q8_0.gguf", 10);
    const uri = "hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q8_0.gguf";
    expect(await findCachedModel(uri, { cacheDir })).toMatchObject({ path: file, files: [file], bytes: 10 });
    expect(await findCachedModel(`${uri}#v2`, { cacheDir })).toBeNull();

    const quant = "hf:o/Big-GGUF:Q4_K_M";
    const first = await put("hf_o_Big.Q4_K_M-00001-of-00002.gguf", 20);
    expect(await findCachedModel(quant, { cacheDir })).toBeNull();
    const second = await put("hf_o_Big.Q4_K_M-00002-of-00002.gguf", 30);
    expect(await findCachedModel(quant, { cacheDir })).toMatchObject({
      path: first,
      files: [first, second],
      bytes: 50,
    });
  });

  it("lists whole models (split ones once, with every part) and unfinished downloads, sorted by name", async () => {
    await put("hf_b_f.gguf", 10);
    await put("hf_a_g-00001-of-00002.gguf", 20);
    await put("hf_a_g-00002-of-00002.gguf", 5);
    await put("hf_c_missing-part-00001-of-00002.gguf", 7);
    await put("hf_d_h.gguf.ipull", 3);
    await put("README.md", 1);
    await mkdir(join(cacheDir, "kv-states"));
    const models = await listCachedModels({ cacheDir });
    expect(models.map((m) => [m.name, m.bytes, m.files.length, m.partial])).toEqual([
      ["hf_a_g-00001-of-00002.gguf", 25, 2, false],
      ["hf_b_f.gguf", 10, 1, false],
      ["hf_d_h.gguf.ipull", 3, 1, true],
    ]);
    expect(models[0]?.mtime).toBeInstanceOf(Date);
  });

  it("lists nothing for a missing cache directory", async () => {
    expect(await listCachedModels({ cacheDir: join(cacheDir, "nope") })).toEqual([]);
  });

  it("removes a model by URI or by name, every part and unfinished download of it", async () => {
    const parts = [await put("hf_o_r-00001-of-00002.gguf", 1), await put("hf_o_r-00002-of-00002.gguf", 1)];
    await put("hf_o_r-00002-of-00002.gguf.ipull", 1);
    await put("hf_o_f.gguf", 1);
    await put("hf_o_g.gguf.ipull", 1);
    expect(await removeCachedModel("hf:o/r-GGUF/r-00001-of-00002.gguf", { cacheDir })).toMatchObject({
      files: parts,
    });
    expect(await readdir(cacheDir)).toEqual(["hf_o_f.gguf", "hf_o_g.gguf.ipull"].sort());
    await removeCachedModel("hf_o_g.gguf.ipull", { cacheDir });
    await removeCachedModel("hf_o_f.gguf", { cacheDir });
    expect(existsSync(cacheDir) && (await readdir(cacheDir))).toEqual([]);
  });

  it("says when the model to remove is not cached", async () => {
    for (const spec of ["hf:o/r/f.gguf", "hf_o_f.gguf", "../outside.gguf"]) {
      const error = await removeCachedModel(spec, { cacheDir }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SparkError);
      expect((error as SparkError).code).toBe("not_found");
      expect((error as SparkError).message).toContain("spark models list");
    }
  });
});
