import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeHub, fakeGguf, startFakeHub } from "../models/test-support/fake-hub.js";
import { SparkError } from "../protocol/errors.js";
import { registerModelsCommand } from "./models-command.js";

const URI = "hf:test-org/tiny-GGUF/tiny-q8_0.gguf";
const content = fakeGguf(64 * 1024);
const parts = [fakeGguf(30_000), fakeGguf(20_000)];
let hub: FakeHub;
let cacheDir: string;
let path: string;

beforeAll(async () => {
  hub = await startFakeHub([
    { owner: "test-org", repo: "tiny-GGUF", file: "tiny-q8_0.gguf", content },
    ...parts.map((part, i) => ({
      owner: "o",
      repo: "big-GGUF",
      file: `big-Q4_0-0000${i + 1}-of-00002.gguf`,
      content: part,
    })),
  ]);
  cacheDir = await mkdtemp(join(tmpdir(), "spark-models-cmd-"));
  path = join(cacheDir, "hf_test-org_tiny-q8_0.gguf");
});
afterAll(async () => {
  await hub.close();
  await rm(cacheDir, { recursive: true, force: true });
});

async function spark(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const program = new Command("spark").exitOverride();
  program.configureOutput({ writeOut: (s) => (stdout += s), writeErr: (s) => (stderr += s) });
  registerModelsCommand(program, {
    cacheDir,
    env: {},
    endpoint: hub.endpoint,
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { isTTY: false, write: (s: string) => (stderr += s) },
  });
  await program.parseAsync(args, { from: "user" });
  return { stdout, stderr };
}

describe("spark models", () => {
  it("lists an empty cache", async () => {
    expect((await spark("models", "list")).stdout).toContain("No models in the cache");
    expect(JSON.parse((await spark("models", "list", "--json")).stdout)).toEqual([]);
  });

  it("pulls, lists and removes a model", async () => {
    const pulled = await spark("models", "pull", URI);
    expect(pulled.stdout).toBe(`${path}\n`);
    expect(pulled.stderr).toContain("100%");
    expect(pulled.stderr).toContain("Verified the sha256 of 1 file(s)");
    expect(await readFile(path)).toEqual(content);

    expect((await spark("models", "pull", URI)).stderr).toContain("already cached");

    const table = (await spark("models", "ls")).stdout;
    expect(table).toMatch(/^NAME +SIZE +PATH\n/);
    expect(table).toContain(`hf_test-org_tiny-q8_0.gguf  65.5 kB  ${path}`);
    const json = JSON.parse((await spark("models", "list", "--json")).stdout);
    expect(json).toEqual([
      {
        name: "hf_test-org_tiny-q8_0.gguf",
        path,
        files: [path],
        bytes: content.length,
        mtime: expect.any(String),
        partial: false,
      },
    ]);

    expect((await spark("models", "rm", URI)).stdout).toBe(`Removed ${path}\n`);
    const error = await spark("models", "rm", URI).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SparkError);
    expect((error as SparkError).code).toBe("not_found");
  });

  it("pulls every part of a split model by its :quant tag, lists it once and removes it by name", async () => {
    const pulled = await spark("models", "pull", "hf:o/big-GGUF:Q4_0");
    const files = [1, 2].map((n) => join(cacheDir, `hf_o_big.Q4_0-0000${n}-of-00002.gguf`));
    expect(pulled.stdout).toBe(`${files[0]}\n`);
    expect(pulled.stderr).toContain("Verified the sha256 of 2 file(s)");
    expect((await spark("models", "list")).stdout).toContain(
      "hf_o_big.Q4_0-00001-of-00002.gguf (2 parts)  50.0 kB",
    );
    expect((await spark("models", "rm", "hf_o_big.Q4_0-00001-of-00002.gguf")).stdout).toBe(
      files.map((file) => `Removed ${file}\n`).join(""),
    );
    expect((await spark("models", "list")).stdout).toContain("No models in the cache");
  });

  it("removes a model's saved KV states with it, and all of them with --kv-cache", async () => {
    await spark("models", "pull", URI);
    const kvDir = join(cacheDir, "kv-states");
    await mkdir(kvDir, { recursive: true });
    await savedState(kvDir, "mine", path);
    await savedState(kvDir, "other", join(cacheDir, "elsewhere.gguf"));
    expect((await spark("models", "list")).stdout).toContain("Saved KV states: 2 (4.0 kB)");

    const removed = await spark("models", "rm", URI);
    expect(removed.stdout).toBe(`Removed ${path}\nRemoved 1 saved KV state(s) (2.0 kB)\n`);
    expect((await readdir(kvDir)).sort()).toEqual(["other.json", "other.kv"]);

    expect((await spark("models", "rm", "--kv-cache")).stdout).toBe("Removed 1 saved KV state(s) (2.0 kB)\n");
    expect(await readdir(kvDir)).toEqual([]);
    const nothing = await spark("models", "rm").catch((e: unknown) => e);
    expect(nothing).toMatchObject({ code: "invalid_request" });
  });

  it("rejects a bad URI with the expected forms", async () => {
    const error = await spark("models", "pull", "owner/repo/file.gguf").catch((e: unknown) => e);
    expect((error as SparkError).code).toBe("invalid_request");
    expect((error as SparkError).message).toContain("hf:owner/repo:Q4_K_M");
  });

  it("alone, prints its help on stdout and succeeds (it used to exit 1)", async () => {
    let out = "";
    const program = new Command("spark").exitOverride();
    program.configureOutput({ writeOut: (s) => (out += s), writeErr: (s) => (out += `ERR ${s}`) });
    registerModelsCommand(program);
    await program.parseAsync(["models"], { from: "user" });
    expect(out).toMatch(/^Usage: spark models/);
    expect(out).toContain("pull");
    const extra = await program.parseAsync(["models", "fetch"], { from: "user" }).catch((e: unknown) => e);
    expect(extra).toMatchObject({ code: "commander.excessArguments" });
  });

  it("documents itself", async () => {
    const help = await spark("models", "--help").catch(() => undefined);
    expect(help).toBeUndefined(); // commander exits (overridden) after printing help
    let out = "";
    const program = new Command("spark").exitOverride();
    program.configureOutput({ writeOut: (s) => (out += s) });
    registerModelsCommand(program);
    await program.parseAsync(["models", "--help"], { from: "user" }).catch(() => undefined);
    expect(out).toContain("pull");
    expect(out).toContain("SPARK_MODELS_DIR");
    expect(out).toContain("spark serve --model ./path/to/model.gguf");
    expect(out).toContain("hf_<owner>_<file>.gguf");
  });
});

/** A saved KV state entry as the engine writes it: a 1000-byte state and its 1000-byte header. */
async function savedState(dir: string, id: string, modelPath: string): Promise<void> {
  const hex = "0".repeat(64);
  const header = {
    format: 1,
    key: {
      model: { path: modelPath, bytes: 1, mtimeMs: 1 },
      contextSize: 4096,
      sequences: 2,
      flashAttention: "false",
      kvCacheKeyType: "1",
      kvCacheValueType: "1",
      runtime: { nodeLlamaCpp: "3.22.1", llamaCpp: "b1", gpu: "false" },
    },
    keyHash: hex,
    tokenCount: 600,
    tokensSha256: hex,
    stateBytes: 1000,
    stateSha256: hex,
  };
  await writeFile(join(dir, `${id}.kv`), Buffer.alloc(1000));
  await writeFile(join(dir, `${id}.json`), JSON.stringify(header).padEnd(1000, " "));
}
