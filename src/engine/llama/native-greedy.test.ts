import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import { collect } from "../test-support/engine-conformance.js";
import { testModelPath } from "../test-support/test-model.js";
import { LlamaEngine } from "./llama-engine.js";

// The native greedy loop exists only in a local build of the patched addon (`npm run build:engine`);
// with the prebuilt binary both engines take the batched path and these still hold.
describe("native greedy loop", () => {
  let native: LlamaEngine;
  let batched: LlamaEngine;
  beforeAll(async () => {
    const modelPath = await testModelPath();
    native = await LlamaEngine.create({ modelPath, contextSize: 2048 });
    batched = await LlamaEngine.create({ modelPath, contextSize: 2048, nativeLoop: false });
  });
  afterAll(async () => {
    await native.dispose();
    await batched.dispose();
  });

  const ask = (content: string): ChatMessage[] => [
    { role: "system", content: "You are Spark." },
    { role: "user", content },
  ];

  test("says which binary runs", () => {
    expect(["local", "prebuilt"]).toContain(native.binary.build);
    if (native.binary.nativeLoop) expect(native.binary.build).toBe("local");
    expect(batched.binary.nativeLoop).toBe(false);
  });

  test("gives the same greedy tokens as the batched path", async () => {
    for (const question of ["Write a function that adds two numbers.", "Explain closures."]) {
      const request = { messages: ask(question), maxOutputTokens: 40 };
      const expected = await collect(batched, request);
      const actual = await collect(native, request);
      expect(actual.text).toBe(expected.text);
      expect(actual.result.usage.outputTokens).toBe(expected.result.usage.outputTokens);
      expect(actual.result.stopReason).toBe(expected.result.stopReason);
    }
  });

  test("a follow-up after a cancelled run decodes the same tokens (the sequence state stays exact)", async () => {
    const messages = ask("Count from one to twenty.");
    const expected = await collect(batched, { messages, maxOutputTokens: 30 });
    const controller = new AbortController();
    let text = "";
    let deltas = 0;
    let stopReason: string | undefined;
    for await (const event of native.generate(
      { messages, maxOutputTokens: 30 },
      { signal: controller.signal },
    )) {
      if (event.type === "text") {
        text += event.text;
        if (++deltas === 3) controller.abort();
      }
      if (event.type === "done") stopReason = event.result.stopReason;
    }
    expect(stopReason).toBe("cancelled");
    expect(expected.text.startsWith(text)).toBe(true);
    const again = await collect(native, { messages, maxOutputTokens: 30 });
    expect(again.text).toBe(expected.text);
  });

  test("a request arriving during a native run gets the context; both give their greedy tokens", async () => {
    const first = { messages: ask("Write a sorting function."), maxOutputTokens: 40 };
    const second = { messages: ask("Write a parser."), maxOutputTokens: 12 };
    const expectedFirst = await collect(batched, first);
    const expectedSecond = await collect(batched, second);
    let firstText = "";
    let secondRun: ReturnType<typeof collect> | undefined;
    for await (const event of native.generate(first)) {
      if (event.type !== "text") continue;
      firstText += event.text;
      // The second request starts while the first is generating (natively, with a local build).
      secondRun ??= collect(native, second);
    }
    expect(secondRun).toBeDefined();
    expect(firstText).toBe(expectedFirst.text);
    expect((await secondRun!).text).toBe(expectedSecond.text);
  });

  test("concurrent greedy streams each run natively, together, and give the tokens each has alone", async () => {
    await using together = await LlamaEngine.create({
      modelPath: await testModelPath(),
      contextSize: 4096,
      sequences: 3,
    });
    const requests = ["Write a stack.", "Write a queue.", "Write a heap."].map((question) => ({
      messages: ask(question),
      maxOutputTokens: 32,
    }));
    const alone: string[] = [];
    for (const request of requests) alone.push((await collect(batched, request)).text);
    const runsBefore = together.nativeRunCounts.runs;
    const texts = await Promise.all(requests.map(async (request) => (await collect(together, request)).text));
    expect(texts).toEqual(alone);
    // Each stream's prompt stops the others' native runs for a moment; every stream then decodes
    // natively, beside the others (one native run at a time would leave two on the batched path).
    if (together.binary.nativeLoop)
      expect(together.nativeRunCounts.runs - runsBefore).toBeGreaterThanOrEqual(3);
  });
});
