import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { writeSyntheticModel } from "../synthetic/synthetic-model.js";
import { collect } from "../test-support/engine-conformance.js";
import { residentAnon } from "../test-support/resident-memory.js";
import { LlamaEngine } from "./llama-engine.js";

/** A shape with a wide KV cache and small weights: 8 layers of 512 keys and 512 values a cell. */
const SHAPE = { layers: 8, embedding: 512, heads: 8, kvHeads: 8, ffn: 512, vocab: 640, contextLength: 32768 };
const CELLS_PER_SEQUENCE = 16384;
const SEQUENCES = 2;
/** Two bytes (f16) a key and a value, in every layer, for every cell of both sequences: 512 MiB. */
const KV_BYTES = SHAPE.layers * 2 * SHAPE.embedding * 2 * CELLS_PER_SEQUENCE * SEQUENCES;

/**
 * The KV cache is sized for whole contexts, but a conversation holds what it has written: the
 * engine's llama.cpp clears a new cache by giving its pages back (patches/llama.cpp/0001), so
 * memory grows with the cells in use instead of the context reserved. Linux only (madvise, /proc),
 * and only a local build carries the change: the prebuilt binary zeroes the cache page by page.
 */
describe.runIf(process.platform === "linux")("a KV cache is resident as it is used", () => {
  let dir: string;
  let modelPath: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "spark-kv-resident-"));
    modelPath = path.join(dir, "wide-kv.gguf");
    await writeSyntheticModel(modelPath, { shape: SHAPE, quant: "Q8_0" });
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("a 512 MiB cache for two 16k-token conversations costs little until it is written, and answers", async (context) => {
    const before = residentAnon();
    await using engine = await LlamaEngine.create({
      modelPath,
      contextSize: CELLS_PER_SEQUENCE,
      sequences: SEQUENCES,
      threads: 1,
    });
    const loaded = residentAnon() - before;
    const answer = await collect(engine, {
      messages: [{ role: "user", content: "Say something." }],
      maxOutputTokens: 24,
      temperature: 0,
    });
    const answered = residentAnon() - before;
    expect(answer.result.usage.outputTokens).toBeGreaterThan(0);
    if (engine.binary.build !== "local") context.skip("the prebuilt binary zeroes the whole cache");
    // The weights are mapped from the file (not anonymous); what remains is the compute buffer and
    // the pages of the cells written, far under the cache's size.
    expect(loaded).toBeLessThan(KV_BYTES / 4);
    expect(answered).toBeLessThan(KV_BYTES / 4);
  });
});
