import {
  copyFile,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  truncate,
  utimes,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import type { GenerateRequest } from "../engine.js";
import { collect } from "../test-support/engine-conformance.js";
import { testModelPath } from "../test-support/test-model.js";
import { KvStateCache, type KvStateKey, kvStatesUsage, removeKvStates } from "./kv-state-cache.js";
import { LlamaEngine, type LlamaEngineOptions } from "./llama-engine.js";

const system = (topic: string): ChatMessage => ({
  role: "system",
  content: `You are Spark, a coding assistant for ${topic}. ${"Answer briefly and exactly. ".repeat(12)}`,
});
const prewarm = (topic: string): GenerateRequest => ({ messages: [system(topic)], prefillOnly: true });
const ask = (topic: string, question = "Write a function that adds two numbers."): GenerateRequest => ({
  messages: [system(topic), { role: "user", content: question }],
  maxOutputTokens: 16,
});

let sharedModel: string;
let dir: string;
let modelPath: string;

beforeAll(async () => {
  sharedModel = await testModelPath();
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "spark-kv-states-"));
  // A copy of its own, so changing its modification time affects no other test.
  modelPath = join(dir, "model.gguf");
  await copyFile(sharedModel, modelPath);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A fresh engine each time, as after a restart: nothing is in memory but what the files restore. */
async function run(request: GenerateRequest, options: Partial<LlamaEngineOptions> = {}) {
  await using engine = await LlamaEngine.create({
    modelPath,
    contextSize: 2048,
    prefillChunk: 64,
    kvStateCache: { dir: join(dir, "kv"), minTokens: 32 },
    ...options,
  });
  return await collect(engine, request);
}

/** A pre-warm then a question on one engine: the first run of a client, which saves the prefix. */
async function warmThenAsk(topic: string, options: Partial<LlamaEngineOptions> = {}) {
  await using engine = await LlamaEngine.create({
    modelPath,
    contextSize: 2048,
    prefillChunk: 64,
    kvStateCache: { dir: join(dir, "kv"), minTokens: 32 },
    ...options,
  });
  const warm = await collect(engine, prewarm(topic));
  const answer = await collect(engine, ask(topic));
  return { prefix: warm.result.usage.inputTokens, answer };
}

async function kvFiles(): Promise<string[]> {
  return (await readdir(join(dir, "kv")).catch(() => [])).sort();
}

describe("saved KV states on the synthetic model", () => {
  test("a restored pre-warm gives exactly the output of evaluating it, and counts as cached", async () => {
    const first = await warmThenAsk("TypeScript");
    expect(first.prefix).toBeGreaterThan(64);
    expect(first.answer.result.usage.cachedInputTokens).toBe(first.prefix);
    const files = await kvFiles();
    expect(files).toEqual([expect.stringMatching(/\.json$/), expect.stringMatching(/\.kv$/)]);
    for (const name of files) expect((await stat(join(dir, "kv", name))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, "kv"))).mode & 0o777).toBe(0o700);

    const restored = await run(ask("TypeScript"));
    expect(restored.result.usage.cachedInputTokens).toBe(first.prefix);
    expect(restored.result.usage.outputTokens).toBe(first.answer.result.usage.outputTokens);
    expect(restored.text).toBe(first.answer.text);
    expect(restored.text.length).toBeGreaterThan(0);
  });

  test("a new conversation's system prompt is saved without a pre-warm and restored for the next one", async () => {
    const first = await run(ask("Rust"));
    expect(first.result.usage.cachedInputTokens).toBe(0);
    const next = await run(ask("Rust", "Now subtract them."));
    // The system prompt (everything before the user message) came from the file.
    expect(next.result.usage.cachedInputTokens).toBeGreaterThan(64);
    expect(next.result.usage.cachedInputTokens).toBeLessThan(next.result.usage.inputTokens - 5);
  });

  test("a short prefix is not saved", async () => {
    await run(prewarm("Go"), { kvStateCache: { dir: join(dir, "kv"), minTokens: 4096 } });
    expect(await kvFiles()).toEqual([]);
  });

  test("a changed prompt, model file or context size restores nothing", async () => {
    const { prefix } = await warmThenAsk("Python");
    expect((await run(ask("Python"))).result.usage.cachedInputTokens).toBe(prefix);

    expect((await run(ask("Python 3"))).result.usage.cachedInputTokens).toBe(0);
    expect((await run(ask("Python"), { contextSize: 1024 })).result.usage.cachedInputTokens).toBe(0);
    await utimes(modelPath, new Date(), new Date(2_000_000_000_000));
    expect((await run(ask("Python"))).result.usage.cachedInputTokens).toBe(0);
  });

  test("a corrupt state file is ignored, deleted and rebuilt", async () => {
    const { prefix, answer } = await warmThenAsk("C");
    const state = (await kvFiles()).find((name) => name.endsWith(".kv"))!;
    await truncate(join(dir, "kv", state), 100);

    const afterCorruption = await run(ask("C"));
    expect(afterCorruption.result.usage.cachedInputTokens).toBe(0);
    // The system prompt was evaluated again and saved anew.
    const rebuilt = await run(ask("C"));
    expect(rebuilt.result.usage.cachedInputTokens).toBe(prefix);
    expect(rebuilt.text).toBe(answer.text);
  });

  test("a state whose tokens differ from its header is not used", async () => {
    await warmThenAsk("Zig");
    await warmThenAsk("Nim");
    const headers = (await kvFiles()).filter((name) => name.endsWith(".json"));
    const zig = headers[0]!;
    const nim = headers[1]!;
    // Each header now names the other one's state file, with matching size and digest.
    const [zigHeader, nimHeader] = await Promise.all(
      [zig, nim].map(async (name) => JSON.parse(await readFile(join(dir, "kv", name), "utf8"))),
    );
    const swapped = (
      header: object,
      other: { tokenCount: number; stateBytes: number; stateSha256: string },
    ) => JSON.stringify({ ...header, stateBytes: other.stateBytes, stateSha256: other.stateSha256 });
    await writeFile(join(dir, "kv", zig), swapped(zigHeader, nimHeader));
    await writeFile(join(dir, "kv", nim), swapped(nimHeader, zigHeader));
    const zigState = join(dir, "kv", zig.replace(/\.json$/, ".kv"));
    const nimState = join(dir, "kv", nim.replace(/\.json$/, ".kv"));
    const [zigBytes, nimBytes] = await Promise.all([readFile(zigState), readFile(nimState)]);
    await writeFile(zigState, nimBytes);
    await writeFile(nimState, zigBytes);

    expect((await run(ask("Zig"))).result.usage.cachedInputTokens).toBe(0);
  });

  test("an unreadable header is deleted", async () => {
    await warmThenAsk("Lua");
    const header = (await kvFiles()).find((name) => name.endsWith(".json"))!;
    await writeFile(join(dir, "kv", header), "{ not json");
    expect((await run(ask("Lua"))).result.usage.cachedInputTokens).toBe(0);
    // Deleted, then written again by the evaluation that followed.
    const rebuilt = JSON.parse(await readFile(join(dir, "kv", header), "utf8"));
    expect(rebuilt).toMatchObject({ format: 1, tokenCount: expect.any(Number) });
  });

  test("the size bound evicts the least recently used state", async () => {
    const kv = join(dir, "kv");
    await warmThenAsk("Haskell");
    const one = await kvStatesUsage(kv);
    expect(one.entries).toBe(1);
    const bounded = { kvStateCache: { dir: kv, minTokens: 32, maxBytes: Math.floor(one.bytes * 1.5) } };
    const ocaml = (await run(prewarm("OCaml"), bounded)).result.usage.inputTokens;
    expect((await kvStatesUsage(kv)).entries).toBe(1);
    expect((await run(ask("OCaml"), bounded)).result.usage.cachedInputTokens).toBe(ocaml);
    expect((await run(ask("Haskell"), bounded)).result.usage.cachedInputTokens).toBe(0);
  });

  test("removing a model's states leaves the others", async () => {
    const kv = join(dir, "kv");
    await warmThenAsk("Elixir");
    const otherModel = join(dir, "other.gguf");
    await copyFile(sharedModel, otherModel);
    await run(prewarm("Elixir"), { modelPath: otherModel });
    expect((await kvStatesUsage(kv)).entries).toBe(2);

    const removed = await removeKvStates(kv, { modelPath });
    expect(removed.entries).toBe(1);
    expect(removed.bytes).toBeGreaterThan(0);
    expect((await run(ask("Elixir"))).result.usage.cachedInputTokens).toBe(0);
    expect(
      (await run(ask("Elixir"), { modelPath: otherModel })).result.usage.cachedInputTokens,
    ).toBeGreaterThan(0);
  });
});

describe("KV state eviction", () => {
  const key: KvStateKey = {
    model: { path: "/m.gguf", bytes: 1, mtimeMs: 1 },
    contextSize: 1,
    sequences: 1,
    flashAttention: "false",
    kvCacheKeyType: "1",
    kvCacheValueType: "1",
    runtime: { nodeLlamaCpp: "x", llamaCpp: "x", gpu: "false" },
  };

  async function entry(id: string, bytes: number, lastUsed: number): Promise<void> {
    await writeFile(join(dir, `${id}.kv`), Buffer.alloc(bytes));
    await writeFile(join(dir, `${id}.json`), "{}");
    await utimes(join(dir, `${id}.json`), new Date(lastUsed), new Date(lastUsed));
  }

  test("goes by last use, not by age, and stops once the rest fits", async () => {
    await entry("a", 1000, 3_000_000);
    await entry("b", 1000, 1_000_000);
    await entry("c", 1000, 2_000_000);
    const cache = new KvStateCache({ dir, maxBytes: 2010 }, key);
    await cache.evict();
    const left = (await readdir(dir)).filter((name) => name !== "model.gguf").sort();
    expect(left).toEqual(["a.json", "a.kv", "c.json", "c.kv"]);
  });

  test("a dead writer's temporary file is cleared; a live one's is left alone", async () => {
    await writeFile(join(dir, "x.kv.1.ab.tmp"), "partial");
    await utimes(join(dir, "x.kv.1.ab.tmp"), new Date(1_000_000), new Date(1_000_000));
    await writeFile(join(dir, "y.kv.2.cd.tmp"), "writing");
    expect(await removeKvStates(dir)).toEqual({ entries: 1, bytes: 7 });
    expect((await readdir(dir)).sort()).toEqual(["model.gguf", "y.kv.2.cd.tmp"]);
  });
});
