import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cachedPath } from "../models/model-cache.js";
import { type FakeHub, fakeGguf, startFakeHub } from "../models/test-support/fake-hub.js";
import { SparkError } from "../protocol/errors.js";
import { registerModelsCommand } from "./models-command.js";

const URI = "hf:test-org/tiny-GGUF/tiny-q8_0.gguf";
const content = fakeGguf(64 * 1024);
let hub: FakeHub;
let cacheDir: string;

beforeAll(async () => {
  hub = await startFakeHub([{ owner: "test-org", repo: "tiny-GGUF", file: "tiny-q8_0.gguf", content }]);
  cacheDir = await mkdtemp(join(tmpdir(), "spark-models-cmd-"));
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
    const path = cachedPath(URI, { cacheDir });
    const pulled = await spark("models", "pull", URI);
    expect(pulled.stdout).toBe(`${path}\n`);
    expect(pulled.stderr).toContain("100%");
    expect(pulled.stderr).toContain("Verified sha256");
    expect(await readFile(path)).toEqual(content);

    expect((await spark("models", "pull", URI)).stderr).toContain("already cached");

    const table = (await spark("models", "ls")).stdout;
    expect(table).toMatch(/^URI +SIZE +PATH\n/);
    expect(table).toContain(`${URI}  65.5 kB  ${path}`);
    const json = JSON.parse((await spark("models", "list", "--json")).stdout);
    expect(json).toEqual([{ uri: URI, path, bytes: content.length, mtime: expect.any(String) }]);

    expect((await spark("models", "rm", URI)).stdout).toBe(`Removed ${path}\n`);
    const error = await spark("models", "rm", URI).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SparkError);
    expect((error as SparkError).code).toBe("not_found");
  });

  it("rejects a bad URI with the expected forms", async () => {
    const error = await spark("models", "pull", "owner/repo/file.gguf").catch((e: unknown) => e);
    expect((error as SparkError).code).toBe("invalid_request");
    expect((error as SparkError).message).toContain("hf:owner/repo/file.gguf");
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
  });
});
