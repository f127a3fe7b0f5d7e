import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import { collect } from "../test-support/engine-conformance.js";
import { testModelPath } from "../test-support/test-model.js";
import { LlamaEngine } from "./llama-engine.js";

describe("Predicted Outputs on the llama engine (greedy)", () => {
  let engine: LlamaEngine;
  const messages: ChatMessage[] = [{ role: "user", content: "Write a function that adds two numbers." }];
  let plain: Awaited<ReturnType<typeof collect>>;

  beforeAll(async () => {
    // A fixed verification cost: how far the native loop drafts depends on acceptance only.
    engine = await LlamaEngine.create({
      modelPath: await testModelPath(),
      contextSize: 2048,
      draftTokenCost: 0.05,
    });
    plain = await collect(engine, { messages, maxOutputTokens: 80 });
    // The synthetic model must write enough for the comparison to mean something.
    expect(plain.result.usage.outputTokens).toBeGreaterThan(40);
  });
  afterAll(async () => {
    await engine.dispose();
  });

  // A random-weight model often writes text in non-canonical tokens (and lone bytes), which a
  // text prediction cannot reproduce token for token; acceptance rates are measured on real text
  // in lookup-predictor.test.ts and in `spark bench`. Here: identical output, consistent counts.
  test("a prediction that matches gives exactly the plain output, with drafts accepted", async () => {
    const predicted = await collect(engine, { messages, maxOutputTokens: 80, prediction: plain.text });
    expect(predicted.text).toBe(plain.text);
    expect(predicted.result.usage.outputTokens).toBe(plain.result.usage.outputTokens);
    expect(predicted.result.usage.acceptedPredictionTokens).toBeGreaterThan(0);
    expect(predicted.result.usage.acceptedPredictionTokens).toBeLessThanOrEqual(
      predicted.result.usage.outputTokens,
    );
  });

  test("a prediction that diverges midway still gives the plain output, and re-synchronises after it", async () => {
    const half = Math.floor(plain.text.length / 2);
    const diverging = `${plain.text.slice(0, half)} completely different words here ${plain.text.slice(half)}`;
    const predicted = await collect(engine, { messages, maxOutputTokens: 80, prediction: diverging });
    expect(predicted.text).toBe(plain.text);
    const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } = predicted.result.usage;
    expect(rejected).toBeGreaterThan(0);
    // Tokens after the divergence are accepted again, not just the first half.
    const firstHalfOnly = await collect(engine, {
      messages,
      maxOutputTokens: 80,
      prediction: plain.text.slice(0, half),
    });
    expect(accepted).toBeGreaterThan(firstHalfOnly.result.usage.acceptedPredictionTokens);
  });

  test("an unrelated prediction changes nothing but speed", async () => {
    const predicted = await collect(engine, {
      messages,
      maxOutputTokens: 80,
      prediction: "zzz qqq ".repeat(40),
    });
    expect(predicted.text).toBe(plain.text);
  });

  test("without a prediction nothing is drafted", async () => {
    const again = await collect(engine, { messages, maxOutputTokens: 80 });
    expect(again.text).toBe(plain.text);
    expect(again.result.usage.acceptedPredictionTokens).toBe(0);
    expect(again.result.usage.rejectedPredictionTokens).toBe(0);
  });
});
