import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import { collect } from "../test-support/engine-conformance.js";
import { testModelPath } from "../test-support/test-model.js";
import { LlamaEngine } from "./llama-engine.js";

const messages: ChatMessage[] = [{ role: "system", content: "You are Spark." }];
const LONG_DRAFT = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");

describe("llama engine type-ahead priority", () => {
  let engine: LlamaEngine;
  beforeAll(async () => {
    engine = await LlamaEngine.create({
      modelPath: await testModelPath(),
      contextSize: 4096,
      draftChunk: 32,
    });
  });
  afterAll(async () => {
    await engine.dispose();
  });

  test("a real request stops a running draft within one chunk, then runs as it would without it", async () => {
    const request = {
      messages: [...messages, { role: "user" as const, content: "Hello" }],
      maxOutputTokens: 6,
      conversation: "typing",
    };
    const draft = engine.draft({ messages, text: LONG_DRAFT, conversation: "typing" });
    const preempting = await collect(engine, request);
    const result = await draft;
    expect(result.outcome).toBe("cancelled");
    expect(result.evaluatedTokens).toBe(32);
    expect(result.prefixTokens).toBeGreaterThan(400);
    expect(preempting.result.stopReason).not.toBe("cancelled");
    const again = await collect(engine, { ...request, conversation: "again" });
    expect(preempting.text).toBe(again.text);
  });

  test("a draft sent while a request generates is not run (busy)", async () => {
    const stream = engine.generate({
      messages: [...messages, { role: "user", content: "Write a long story." }],
      maxOutputTokens: 64,
    });
    const first = await stream.next();
    expect(first.done).toBe(false);
    expect(await engine.draft({ messages, text: "Another question" })).toEqual({
      outcome: "busy",
      prefixTokens: 0,
      evaluatedTokens: 0,
    });
    await stream.return(undefined);
  });

  test("an aborted signal stops a draft; a draft past the context is refused", async () => {
    const controller = new AbortController();
    controller.abort();
    expect((await engine.draft({ messages, text: "Hi there" }, { signal: controller.signal })).outcome).toBe(
      "busy",
    );
    const huge = "tok ".repeat(6000);
    await expect(engine.draft({ messages, text: huge })).rejects.toMatchObject({
      code: "context_length_exceeded",
    });
  });
});
