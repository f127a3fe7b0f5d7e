import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testModelPath } from "../test-support/test-model.js";
import { type LoadedEngine, loadEngine } from "./internal/engine-loading.js";
import { SequencePool, type Slot } from "./internal/sequence-pool.js";

// The pool's choices on a real context's sequences. Nothing is evaluated, so no prefix is shared and
// every choice comes down to where a new conversation's cells go.
describe("the sequence pool keeps busy sequences next to each other", () => {
  let loaded: LoadedEngine;
  let sequences: LlamaContextSequence[];
  beforeAll(async () => {
    loaded = await loadEngine({ modelPath: await testModelPath(), contextSize: 256, sequences: 6 });
    sequences = Array.from({ length: loaded.context.totalSequences }, () => loaded.context.getSequence());
  });
  afterAll(async () => {
    await loaded.context.dispose();
    await loaded.model.dispose();
  });

  const noTokens: Token[] = [];
  const newPool = () => new SequencePool(sequences);
  const id = (slot: Slot) => sequences.indexOf(slot.sequence);

  test("concurrent new conversations take consecutive sequences after every sequence was used", async () => {
    const pool = newPool();
    const warm = await Promise.all(["a", "b", "c", "d", "e", "f"].map((c) => pool.acquire(noTokens, c)));
    for (const slot of warm) pool.release(slot);
    // "a", "c" and "e" come back, so the least recently used sequences are "b", "d" and "f"'s, apart.
    for (const c of ["a", "c", "e"]) pool.release(await pool.acquire(noTokens, c));

    const first = await pool.acquire(noTokens, "one");
    const second = await pool.acquire(noTokens, "two");
    const third = await pool.acquire(noTokens, "three");
    const ids = [id(first), id(second), id(third)].sort((x, y) => x - y);
    expect(ids[1]! - ids[0]!).toBe(1);
    expect(ids[2]! - ids[1]!).toBe(1);
  });

  test("a free sequence between two busy ones is taken first", async () => {
    const pool = newPool();
    const slots = await Promise.all(["a", "b", "c", "d", "e", "f"].map((c) => pool.acquire(noTokens, c)));
    const byId = [...slots].sort((x, y) => id(x) - id(y));
    // "c" comes back once, so its sequence is the most recently used of the free ones.
    pool.release(byId[2]!);
    pool.release(await pool.acquire(noTokens, "c"));
    // Busy: 0, 1, 3; free: 2 (between them), 4 (the least recently used) and 5.
    pool.release(byId[4]!);
    pool.release(byId[5]!);
    expect(id(await pool.acquire(noTokens, "new"))).toBe(id(byId[2]!));
  });

  test("a conversation still gets its own sequence back, wherever it is", async () => {
    const pool = newPool();
    const slots = await Promise.all(["a", "b", "c", "d", "e", "f"].map((c) => pool.acquire(noTokens, c)));
    const byId = [...slots].sort((x, y) => id(x) - id(y));
    for (const slot of byId.slice(2)) pool.release(slot);
    // Sequences 0 and 1 are busy; "f" is on one away from them.
    const f = slots[5]!;
    expect(id(f)).toBeGreaterThan(2);
    expect(id(await pool.acquire(noTokens, "f"))).toBe(id(f));
  });
});
