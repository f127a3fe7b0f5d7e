import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import type { EngineEvent, GenerateRequest } from "../engine.js";
import { collect } from "../test-support/engine-conformance.js";
import { testModelPath } from "../test-support/test-model.js";
import { recordBatches } from "./internal/test-support/batch-recorder.js";
import { LlamaEngine } from "./llama-engine.js";

const ask = (content: string): ChatMessage[] => [{ role: "user", content }];

describe("continuous batching on the llama engine", () => {
  let engine: LlamaEngine;
  beforeAll(async () => {
    engine = await LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 4096, sequences: 4 });
  });
  afterAll(async () => {
    await engine.dispose();
  });

  // A new request that lands on a sequence still holding another conversation has to erase it first,
  // and the erase needs node-llama-cpp's context lock. Its batch loop used to keep that lock while any
  // stream had a token queued, so the new request waited for every other stream to finish
  // (patches/node-llama-cpp+3.22.1.patch releases it between batches).
  test("a new request starts while three other streams are still decoding", async () => {
    // Every sequence holds a conversation, so the newcomer's sequence must be erased.
    await Promise.all(
      ["alpha", "beta", "gamma", "delta"].map((w) =>
        collect(engine, { messages: ask(w), maxOutputTokens: 8 }),
      ),
    );

    const longest = 1500;
    const counts = [0, 0, 0];
    const finished = [false, false, false];
    const stop = new AbortController();
    const streams = ["one", "two", "three"].map(async (word, i) => {
      const request = { messages: ask(`stream ${word}`), maxOutputTokens: longest };
      for await (const event of engine.generate(request, { signal: stop.signal })) {
        if (event.type === "text") counts[i]!++;
      }
      finished[i] = true;
    });
    while (counts.some((n) => n < 3)) await new Promise((resolve) => setTimeout(resolve, 5));

    const atStart = [...counts];
    let atFirstToken: { counts: number[]; finished: boolean[] } | undefined;
    const newcomer: EngineEvent[] = [];
    for await (const event of engine.generate({ messages: ask("a new question"), maxOutputTokens: 4 })) {
      atFirstToken ??= { counts: [...counts], finished: [...finished] };
      newcomer.push(event);
    }
    stop.abort();
    await Promise.all(streams);

    expect(newcomer.at(-1)?.type).toBe("done");
    // A random model may end a stream early by itself; none may run on for long while the newcomer
    // waits (its prompt takes a few steps), and some still decode when its first token comes.
    expect(atFirstToken!.finished).toContain(false);
    atFirstToken!.counts.forEach((count, i) => {
      expect(count - atStart[i]!).toBeLessThan(100);
    });
  });

  test("concurrent streams give the tokens each has alone", async () => {
    const words = ["north", "south", "east", "west"];
    const request = (word: string) => ({ messages: ask(`tell me about the ${word}`), maxOutputTokens: 24 });
    const alone: string[] = [];
    for (const word of words) alone.push((await collect(engine, request(word))).text);
    const together = await Promise.all(words.map((word) => collect(engine, request(word))));
    expect(together.map(({ text }) => text)).toEqual(alone);
  });

  // The seam of continuous batching and the native loop. Prompts evaluated in one batch end their
  // claims on the context one by one; the generations must still take their first step together
  // (the last one used to take a step of its own after the others' batched step), whatever their
  // number, prompts and lengths, and a stream cancelled after its first tokens (a client gone)
  // must leave the others to finish and the engine to serve the next round. (That each gives the
  // tokens it has alone is a SmolLM2 test, src/real-model/batching-smollm2.test.ts: this random
  // 64-wide model's logits move with a batch's size.)
  test("streams started together take their first step together, also when some are cancelled", async () => {
    const batches = recordBatches(engine);
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            topic: fc.constantFrom("rivers", "closures", "sorting", "the moon", "tests"),
            maxOutputTokens: fc.integer({ min: 1, max: 8 }),
            cancelAfter: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
          }),
          { minLength: 2, maxLength: 4 },
        ),
        async (streams) => {
          run++;
          const from = batches.length;
          const ends = await Promise.all(
            streams.map(({ topic, maxOutputTokens, cancelAfter }, i) =>
              generateUntil(
                { messages: ask(`run ${run}, stream ${i}: tell me about ${topic}`), maxOutputTokens },
                cancelAfter,
              ),
            ),
          );
          for (const [i, { cancelAfter }] of streams.entries()) {
            if (cancelAfter === undefined) expect(ends[i]).not.toBe("cancelled");
          }
          const mine = batches.slice(from);
          const prompts = mine.findIndex((batch) => new Set(batch.seqs).size === streams.length);
          expect(prompts).toBeGreaterThanOrEqual(0);
          expect(new Set(mine[prompts + 1]?.seqs).size).toBe(streams.length);
        },
      ),
      { numRuns: 30 },
    );
    // Nothing is left waiting on the context: a lone request still answers.
    expect(
      (await collect(engine, { messages: ask("after"), maxOutputTokens: 2 })).result.stopReason,
    ).not.toBe("cancelled");
  });

  /** Runs a request to its end, cancelling it after `cancelAfter` text events; its stop reason. */
  async function generateUntil(request: GenerateRequest, cancelAfter: number | undefined): Promise<string> {
    const controller = new AbortController();
    let texts = 0;
    let stopReason = "";
    for await (const event of engine.generate(request, { signal: controller.signal })) {
      if (event.type === "text" && ++texts === cancelAfter) controller.abort();
      if (event.type === "done") stopReason = event.result.stopReason;
    }
    return stopReason;
  }
});
