import { execFileSync } from "node:child_process";
import os from "node:os";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import { collect, describeEngineConformance } from "../test-support/engine-conformance.js";
import { testModelPath } from "../test-support/test-model.js";
import { LlamaEngine } from "./llama-engine.js";

describeEngineConformance("llama", async () =>
  LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 2048 }),
);

describe("llama engine on a synthetic model", () => {
  let engine: LlamaEngine;
  beforeAll(async () => {
    engine = await LlamaEngine.create({
      modelPath: await testModelPath(),
      contextSize: 4096,
      prefillChunk: 64,
    });
  });
  afterAll(async () => {
    await engine.dispose();
  });

  const messages: ChatMessage[] = [
    { role: "system", content: "You are Spark." },
    { role: "user", content: "Write a function that adds two numbers." },
  ];

  test("uses one thread per physical core, as lscpu counts them", () => {
    const cores = execFileSync("lscpu", ["-p=CORE,SOCKET"], { encoding: "utf8" })
      .split("\n")
      .filter((line) => line && !line.startsWith("#"));
    expect(engine.threads).toBe(Math.min(new Set(cores).size, os.availableParallelism()));
  });

  test("greedy decoding is deterministic", async () => {
    const a = await collect(engine, { messages, maxOutputTokens: 12 });
    const b = await collect(engine, { messages, maxOutputTokens: 12 });
    expect(a.text).toBe(b.text);
    expect(a.text.length).toBeGreaterThan(0);
  });

  test("cancel stops a long prompt evaluation within one chunk", async () => {
    const long = Array.from({ length: 80 }, (_, i) => `line ${i}: const value${i} = compute(${i});`).join(
      "\n",
    );
    const controller = new AbortController();
    const progress: number[] = [];
    const { result } = await collect(
      engine,
      { messages: [{ role: "user", content: long }], maxOutputTokens: 4 },
      {
        signal: controller.signal,
        onPrefillProgress: (evaluated) => {
          progress.push(evaluated);
          controller.abort();
        },
      },
    );
    expect(result.usage.inputTokens).toBeGreaterThan(640);
    expect(result.stopReason).toBe("cancelled");
    expect(result.usage.outputTokens).toBe(0);
    // It stopped right after the chunk during which the cancel arrived.
    expect(progress).toEqual([64]);
  });

  test("a steered continuation reuses the live KV state: nothing is recomputed", async () => {
    const controller = new AbortController();
    let partial = "";
    let first = 0;
    for await (const event of engine.generate(
      { messages, maxOutputTokens: 40, conversation: "steer" },
      { signal: controller.signal },
    )) {
      if (event.type === "text") {
        partial += event.text;
        if (partial.length > 20) controller.abort();
      } else if (event.type === "done") {
        first = event.result.usage.inputTokens + event.result.usage.outputTokens;
        expect(event.result.stopReason).toBe("cancelled");
      }
    }
    const continued = await collect(engine, {
      messages: [
        ...messages,
        { role: "assistant", content: partial },
        { role: "user", content: "Use tabs." },
      ],
      maxOutputTokens: 4,
      conversation: "steer",
    });
    // Every token of the prompt and of the partial answer is reused, but the one sampled last
    // (it was never evaluated).
    expect(continued.result.usage.cachedInputTokens).toBeGreaterThanOrEqual(first - 1);
  });

  test("a reply with a tool call is not evaluated again when the next prompt renders it", async () => {
    const tools = [
      {
        name: "read_file",
        parameters: {
          type: "object",
          properties: { path: { type: "string", enum: ["a.ts", "b.ts"] }, line: { type: "integer" } },
          required: ["path", "line"],
        },
      },
    ];
    const asked: ChatMessage[] = [...messages, { role: "user", content: "Read a file." }];
    const first = await collect(engine, {
      messages: asked,
      tools,
      toolChoice: "required",
      maxOutputTokens: 400,
      conversation: "call-reuse",
    });
    expect(first.result.stopReason).toBe("tool_calls");
    const calls = first.events.flatMap((event) => (event.type === "tool_call" ? [event.call] : []));
    const next = await collect(engine, {
      messages: [
        ...asked,
        { role: "assistant", content: first.text, toolCalls: calls },
        ...calls.map(
          (call): ChatMessage => ({ role: "tool", callId: call.callId, name: call.name, content: "ok" }),
        ),
      ],
      tools,
      maxOutputTokens: 2,
      conversation: "call-reuse",
    });
    const { inputTokens, outputTokens } = first.result.usage;
    expect(next.result.usage.cachedInputTokens).toBeGreaterThanOrEqual(inputTokens + outputTokens - 1);
  });

  test("an input longer than the context is refused with context_length_exceeded", async () => {
    const huge = "word ".repeat(20_000);
    await expect(collect(engine, { messages: [{ role: "user", content: huge }] })).rejects.toMatchObject({
      code: "context_length_exceeded",
    });
  });
});
