import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import { ensureSyntheticModel, SYNTHETIC_SHAPES, writeSyntheticModel } from "../synthetic/synthetic-model.js";
import { type Collected, collect } from "../test-support/engine-conformance.js";
import { LlamaEngine, type LlamaEngineOptions } from "./llama-engine.js";

const messages: ChatMessage[] = [{ role: "user", content: "Write a function that adds two numbers." }];
const OUTPUT = 48;

describe("an optional draft model on the llama engine (greedy)", () => {
  let dir: string;
  let mainPath: string;
  let otherSeedPath: string;
  const engines: LlamaEngine[] = [];
  let plain: Collected;

  const create = async (options: Partial<LlamaEngineOptions>) => {
    const engine = await LlamaEngine.create({
      modelPath: mainPath,
      contextSize: 1024,
      threads: 1,
      // How far the native loop drafts depends on acceptance only, not on this machine's timings.
      draftTokenCost: 0.05,
      ...options,
    });
    engines.push(engine);
    return engine;
  };

  beforeAll(async () => {
    // Built here, not taken from the shared cache: a cached file written by an older synthetic
    // writer would have another vocabulary than a new one of another seed.
    dir = await mkdtemp(path.join(os.tmpdir(), "spark-draft-"));
    mainPath = await ensureSyntheticModel(dir, "tiny", "Q8_0");
    otherSeedPath = await ensureSyntheticModel(dir, "tiny", "Q8_0", { seed: 2 });
    const engine = await create({});
    plain = await collect(engine, { messages, maxOutputTokens: OUTPUT });
    expect(plain.result.usage.outputTokens).toBe(OUTPUT);
    expect(plain.result.usage.acceptedPredictionTokens).toBe(0);
  });
  afterAll(async () => {
    for (const engine of engines) await engine.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  test("the model as its own draft: the same text, nearly every token from a draft", async () => {
    const engine = await create({ draftModelPath: mainPath, draftMinConfidence: 0, draftTokens: 8 });
    expect(engine.draftModelPath).toBe(mainPath);
    const runs = { ...engine.nativeRunCounts };
    const drafted = await collect(engine, { messages, maxOutputTokens: OUTPUT });
    expect(drafted.text).toBe(plain.text);
    // The native loop has no draft model: node-llama-cpp's batched path drafts with it.
    expect(engine.nativeRunCounts.runs).toBe(runs.runs);
    const {
      outputTokens,
      acceptedPredictionTokens: accepted,
      rejectedPredictionTokens: rejected,
    } = drafted.result.usage;
    expect(outputTokens).toBe(OUTPUT);
    // Passes of 1 + 8 tokens: 8 of every 9 come from the draft. Only the draft cut off by
    // max_output_tokens is rejected (validated but never used).
    expect(accepted).toBeGreaterThanOrEqual(Math.floor((OUTPUT * 8) / 9) - 2);
    expect(accepted).toBeLessThan(OUTPUT);
    expect(rejected).toBeLessThanOrEqual(8);

    // A follow-up turn of the same conversation: the draft's state follows it too.
    const turn2: ChatMessage[] = [
      ...messages,
      { role: "assistant", content: plain.text },
      { role: "user", content: "Now subtract them." },
    ];
    const plain2 = await collect(engines[0]!, { messages: turn2, maxOutputTokens: 24, conversation: "a" });
    const drafted2 = await collect(engine, { messages: turn2, maxOutputTokens: 24, conversation: "a" });
    expect(drafted2.text).toBe(plain2.text);
    expect(drafted2.result.usage.acceptedPredictionTokens).toBeGreaterThanOrEqual(18);
  });

  test("after a pre-warm and a cancelled answer, the draft model still follows the conversation", async () => {
    // The same steps without a draft model give the reference: a pre-warm evaluates the prompt in
    // other pieces than one request does, and llama.cpp's results differ in the last bits with how
    // a prompt was cut, which can change a random model's near-tie picks.
    const steps = async (engine: LlamaEngine, conversation: string) => {
      const warm = await collect(engine, { messages, prefillOnly: true, conversation });
      expect(warm.result.usage.outputTokens).toBe(0);
      const controller = new AbortController();
      let partial = "";
      for await (const event of engine.generate(
        { messages, maxOutputTokens: OUTPUT, conversation },
        { signal: controller.signal },
      )) {
        if (event.type === "text") {
          partial += event.text;
          if (partial.length > 10) controller.abort();
        } else if (event.type === "done") expect(event.result.stopReason).toBe("cancelled");
      }
      return { partial, again: await collect(engine, { messages, maxOutputTokens: OUTPUT, conversation }) };
    };
    const reference = await steps(engines[0]!, "b-plain");
    const engine = await create({ draftModelPath: mainPath, draftMinConfidence: 0, draftTokens: 8 });
    const drafted = await steps(engine, "b");
    expect(reference.again.text.startsWith(drafted.partial)).toBe(true);
    expect(drafted.again.text).toBe(reference.again.text);
    expect(drafted.again.result.usage.acceptedPredictionTokens).toBeGreaterThan(OUTPUT / 2);
  });

  test("concurrent requests with a draft model run to the end together, each drafted by the model", async () => {
    const engine = await create({
      draftModelPath: mainPath,
      draftMinConfidence: 0,
      draftTokens: 8,
      sequences: 4,
      contextSize: 4096,
    });
    const tasks = ["sorts a list", "parses a date", "merges two maps", "counts words"];
    const runs = { ...engine.nativeRunCounts };
    // In the batched path (the native loop has no draft model). A random model's greedy text may
    // differ from alone (a batch's numerics tip near-ties).
    const all = await Promise.all(
      tasks.map((task) =>
        collect(engine, {
          messages: [{ role: "user", content: `Write a function that ${task}.` }],
          maxOutputTokens: OUTPUT,
        }),
      ),
    );
    for (const { result } of all) {
      expect(result.stopReason).toBe("length");
      expect(result.usage.outputTokens).toBe(OUTPUT);
      expect(result.usage.acceptedPredictionTokens).toBeGreaterThan(OUTPUT / 2);
    }
    expect(engine.nativeRunCounts.runs).toBe(runs.runs);
  });

  test("a draft model that mostly disagrees changes nothing but speed", async () => {
    const engine = await create({ draftModelPath: otherSeedPath });
    const drafted = await collect(engine, { messages, maxOutputTokens: OUTPUT });
    expect(drafted.text).toBe(plain.text);
    const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } = drafted.result.usage;
    // Something was drafted and checked.
    expect(accepted + rejected).toBeGreaterThan(0);
    expect(accepted).toBeLessThan(OUTPUT);
  });

  test("a prediction drafts alone; prompt lookup (every request with tools) hands over to the draft model where it finds nothing", async () => {
    const engine = await create({ draftModelPath: mainPath, draftMinConfidence: 0, draftTokens: 8 });
    // An unrelated prediction is refuted at once and never matches: the draft model (which would
    // be right nearly every time) is not consulted.
    const unrelated = await collect(engine, {
      messages,
      maxOutputTokens: OUTPUT,
      prediction: "zzz qqq ".repeat(40),
    });
    expect(unrelated.text).toBe(plain.text);
    expect(unrelated.result.usage.acceptedPredictionTokens).toBe(0);
    expect(unrelated.result.usage.rejectedPredictionTokens).toBeGreaterThan(0);

    const predicted = await collect(engine, { messages, maxOutputTokens: OUTPUT, prediction: plain.text });
    expect(predicted.text).toBe(plain.text);
    expect(predicted.result.usage.acceptedPredictionTokens).toBeGreaterThan(0);

    // The answer is nowhere in the prompt: the draft model drafts nearly all of it.
    const lookup = await collect(engine, { messages, maxOutputTokens: OUTPUT, promptLookup: true });
    expect(lookup.text).toBe(plain.text);
    expect(lookup.result.usage.acceptedPredictionTokens).toBeGreaterThan(OUTPUT / 2);

    // The next plain request drafts with the draft model again.
    const again = await collect(engine, { messages, maxOutputTokens: OUTPUT });
    expect(again.text).toBe(plain.text);
    expect(again.result.usage.acceptedPredictionTokens).toBeGreaterThan(OUTPUT / 2);
  });

  test("a draft model with another vocabulary is refused with a clear error", async () => {
    // The tiny shape with another vocabulary size (so other special-token ids too).
    const other = path.join(dir, "tiny-vocab700.gguf");
    await writeSyntheticModel(other, { shape: { ...SYNTHETIC_SHAPES.tiny, vocab: 700 }, quant: "Q8_0" });
    const refused = LlamaEngine.create({
      modelPath: mainPath,
      draftModelPath: other,
      contextSize: 1024,
      threads: 1,
    });
    await expect(refused).rejects.toMatchObject({ code: "invalid_request" });
    const message = await refused.catch((error: Error) => error.message);
    expect(message).toContain(mainPath);
    expect(message).toContain(other);
    expect(message).toMatch(/must share the main model's vocabulary/);
  });

  test("a draft model file that cannot be loaded names that file", async () => {
    const missing = path.join(dir, "no-such-draft.gguf");
    await expect(
      LlamaEngine.create({ modelPath: mainPath, draftModelPath: missing, contextSize: 1024, threads: 1 }),
    ).rejects.toMatchObject({ code: "model_unavailable", message: expect.stringContaining(missing) });
  });
});
