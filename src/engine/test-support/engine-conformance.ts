import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage } from "../../protocol/chat.js";
import type { Engine, EngineEvent, GenerateOptions, GenerateRequest, GenerateResult } from "../engine.js";

export interface Collected {
  text: string;
  events: EngineEvent[];
  result: GenerateResult;
}

export async function collect(
  engine: Engine,
  request: GenerateRequest,
  options?: GenerateOptions,
): Promise<Collected> {
  const events: EngineEvent[] = [];
  for await (const event of engine.generate(request, options)) events.push(event);
  const done = events.filter((e) => e.type === "done");
  expect(done).toHaveLength(1);
  expect(events.at(-1)?.type).toBe("done");
  const text = events.map((e) => (e.type === "text" ? e.text : "")).join("");
  return { text, events, result: (done[0] as Extract<EngineEvent, { type: "done" }>).result };
}

/**
 * The behaviour every engine owes the server, run against each implementation (scripted, llama,
 * upstream) so they stay interchangeable.
 */
export function describeEngineConformance(name: string, create: () => Promise<Engine>): void {
  describe(`${name} engine conformance`, () => {
    let engine: Engine;
    beforeAll(async () => {
      engine = await create();
    });
    afterAll(async () => {
      await engine?.dispose();
    });

    const user = (content: string): ChatMessage[] => [
      { role: "system", content: "You are a terse coding assistant." },
      { role: "user", content },
    ];

    test("streams text and ends with exactly one done event carrying usage and timing", async () => {
      const { events, result } = await collect(engine, {
        messages: user("Write a loop."),
        maxOutputTokens: 8,
      });
      for (const event of events) if (event.type === "text") expect(event.text.length).toBeGreaterThan(0);
      expect(result.usage.inputTokens).toBeGreaterThan(0);
      expect(result.usage.outputTokens).toBeGreaterThan(0);
      expect(result.usage.outputTokens).toBeLessThanOrEqual(8);
      expect(result.timing.firstTokenMs).toBeGreaterThanOrEqual(0);
      expect(result.timing.decodeMs).toBeGreaterThanOrEqual(0);
    });

    test("maxOutputTokens ends the output with stopReason length", async () => {
      const { result } = await collect(engine, {
        messages: user("Count to one hundred."),
        maxOutputTokens: 3,
      });
      expect(result.stopReason).toBe("length");
      expect(result.usage.outputTokens).toBe(3);
    });

    test("aborting stops at the next token with stopReason cancelled", async () => {
      const controller = new AbortController();
      const events: EngineEvent[] = [];
      for await (const event of engine.generate(
        { messages: user("Tell a long story."), maxOutputTokens: 200 },
        {
          signal: controller.signal,
        },
      )) {
        events.push(event);
        if (event.type === "text") controller.abort();
      }
      const done = events.at(-1);
      expect(done?.type).toBe("done");
      if (done?.type !== "done") return;
      expect(done.result.stopReason).toBe("cancelled");
      expect(done.result.usage.outputTokens).toBeLessThanOrEqual(2);
    });

    test("prefillOnly evaluates the input and generates nothing", async () => {
      const { events, result } = await collect(engine, {
        messages: user("Warm up."),
        prefillOnly: true,
        conversation: "warm",
      });
      expect(events.filter((e) => e.type === "text")).toEqual([]);
      expect(result.usage.outputTokens).toBe(0);
      expect(result.stopReason).toBe("stop");
    });

    test("a follow-up turn of a conversation evaluates only its new tokens", async () => {
      const first = await collect(engine, {
        messages: user("Name a prime."),
        maxOutputTokens: 6,
        conversation: "c1",
      });
      const messages: ChatMessage[] = [
        ...user("Name a prime."),
        { role: "assistant", content: first.text },
        { role: "user", content: "Another one." },
      ];
      const second = await collect(engine, { messages, maxOutputTokens: 4, conversation: "c1" });
      // Everything of turn one is reused: its prompt and the output it generated.
      expect(second.result.usage.cachedInputTokens).toBeGreaterThanOrEqual(
        first.result.usage.inputTokens + first.result.usage.outputTokens - 1,
      );
      expect(second.result.usage.cachedInputTokens).toBeLessThan(second.result.usage.inputTokens);
    });

    test("breaking out of the stream leaves the engine usable", async () => {
      for await (const event of engine.generate({ messages: user("Go on and on."), maxOutputTokens: 50 })) {
        if (event.type === "text") break;
      }
      const { result } = await collect(engine, { messages: user("Still there?"), maxOutputTokens: 2 });
      expect(result.usage.outputTokens).toBeGreaterThan(0);
    });
  });
}
