import fc from "fast-check";
import type { LlamaContextSequence, Token } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testModelPath } from "../test-support/test-model.js";
import { type LoadedEngine, loadEngine } from "./internal/engine-loading.js";
import { SequencePool, type Slot } from "./internal/sequence-pool.js";

// The pool's choices on a real context's sequences. Where nothing is evaluated no prefix is shared,
// and every choice comes down to where a new conversation's cells go.
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

  /** `length` tokens of a system prompt every conversation starts with (the tiny model's ids). */
  const system = (length: number) => Array.from({ length }, (_, i) => ((i * 7 + 3) % 600) + 1) as Token[];

  /** Each sequence holds `prefixes[i]` and nothing else. */
  async function hold(prefixes: Token[][]): Promise<void> {
    for (const [i, sequence] of sequences.entries()) {
      await sequence.eraseContextTokenRanges([{ start: 0, end: sequence.nextTokenIndex }]);
      if (prefixes[i]!.length > 0) await sequence.evaluateWithoutGeneratingNewTokens(prefixes[i]!);
    }
  }

  /** Whether the busy sequences' ids run without a gap. */
  const oneRun = (slots: Slot[]) => {
    const ids = slots.map(id).sort((x, y) => x - y);
    return ids.every((value, i) => i === 0 || value === ids[i - 1]! + 1);
  };

  test("a sequence sharing a few tokens less but next to the busy ones is taken over first", async () => {
    const prompt = [...system(50), 7 as Token];
    // Sequence 2 shares 30 tokens, sequence 4 shares 40: re-evaluating 10 costs less than a
    // second micro-batch in every step of the reply.
    await hold([[], [], system(30), [], system(40), []]);
    const pool = newPool();
    const busy = [await pool.acquire(noTokens, "a"), await pool.acquire(noTokens, "b")];
    expect(busy.map(id)).toEqual([0, 1]);
    expect(id(await pool.acquire(prompt, undefined))).toBe(2);

    // Sharing 40 tokens more is worth the gap.
    await hold([[], [], system(5), [], system(45), []]);
    const again = newPool();
    await again.acquire(noTokens, "a");
    await again.acquire(noTokens, "b");
    expect(id(await again.acquire(prompt, undefined))).toBe(4);
  });

  // The seam of prefix copies and placement: rounds of new conversations that share a system prompt
  // with every sequence (the bench's streams, a team's agents) arrive together and copy it from
  // other sequences, which are busy while copied from. The copies must not take the places next to
  // the busy sequences: each round's sequences run without a gap (one micro-batch a step).
  test("rounds of new conversations copying a shared system prompt take consecutive sequences", async () => {
    await hold(sequences.map(() => system(40)));
    const pool = newPool();
    const warm = await Promise.all(sequences.map((_, i) => pool.acquire(system(40), `old ${i}`)));
    for (const slot of warm) pool.release(slot);
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), async (count) => {
        round++;
        const slots = await Promise.all(
          Array.from({ length: count }, (_, i) =>
            pool.acquire([...system(40), (round * 4 + i) as Token], `round ${round} conversation ${i}`),
          ),
        );
        const ids = slots.map(id);
        for (const slot of slots) pool.release(slot);
        expect(oneRun(slots), `sequences ${ids.join(", ")}`).toBe(true);
      }),
      { numRuns: 30 },
    );
  });
});
