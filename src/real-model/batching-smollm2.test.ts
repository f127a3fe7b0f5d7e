import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { collect } from "../engine/test-support/engine-conformance.js";
import { smollm2Path } from "./test-support/smollm2.js";

const model = smollm2Path();

/**
 * The seam of continuous batching and the native loop on a real model: streams started together
 * (their prompts in one batch, their first step shared, the rest in the native loop, ending at
 * different lengths) give the tokens each gives alone on a second engine. Short conversations:
 * past 512 tokens of context llama.cpp attends for one sequence's single token along another path
 * than for a batch of several sequences (a split of the KV cache), and a near-tie can flip.
 */
describe.runIf(model)("streams started together on SmolLM2", () => {
  let together: LlamaEngine;
  let alone: LlamaEngine;
  beforeAll(async () => {
    together = await LlamaEngine.create({ modelPath: model!, contextSize: 4096, sequences: 4 });
    alone = await LlamaEngine.create({ modelPath: model!, contextSize: 4096, sequences: 4 });
  });
  afterAll(async () => {
    await together?.dispose();
    await alone?.dispose();
  });

  test("each gives the tokens it gives alone, whatever their number, questions and lengths", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            question: fc.constantFrom(
              "What is a closure in JavaScript?",
              "Write a function that reverses a string.",
              "Name three rivers in Europe.",
              "How do I sort an array of numbers?",
            ),
            maxOutputTokens: fc.integer({ min: 1, max: 24 }),
          }),
          { minLength: 2, maxLength: 4 },
        ),
        async (streams) => {
          run++;
          const requests = streams.map(({ question, maxOutputTokens }, i) => ({
            messages: [{ role: "user" as const, content: `(${run}.${i}) ${question}` }],
            maxOutputTokens,
          }));
          const replies = await Promise.all(requests.map((request) => collect(together, request)));
          for (const [i, request] of requests.entries()) {
            const expected = await collect(alone, request);
            expect(replies[i]!.text).toBe(expected.text);
            expect(replies[i]!.result.usage.outputTokens).toBe(expected.result.usage.outputTokens);
          }
        },
      ),
      { numRuns: 12 },
    );
  });
});
