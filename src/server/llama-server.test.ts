import { ResponsesWS } from "openai/resources/responses/ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";
import { type AnyEvent, EventLog, isEnd } from "./test-support/ws-events.js";

type Usage = { input_tokens: number; output_tokens: number; input_tokens_details: { cached_tokens: number } };

describe("spark serve on the llama engine (synthetic model) with the official SDK", () => {
  let t: TestServer;
  let engine: LlamaEngine;
  beforeAll(async () => {
    engine = await LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 4096 });
    t = await startTestServer(engine);
  });
  afterAll(async () => {
    await t.server.close();
    await engine.dispose();
  });

  test("responses.create, streamed and not", async () => {
    const plain = await t.client.responses.create({
      model: "",
      input: "Hello",
      max_output_tokens: 8,
      temperature: 0,
    });
    expect(plain.usage?.output_tokens).toBeGreaterThan(0);
    expect(plain.output_text.length).toBeGreaterThan(0);

    const stream = await t.client.responses.create({
      input: "Hello",
      max_output_tokens: 8,
      temperature: 0,
      stream: true,
      model: "",
    });
    let text = "";
    let completed: { output_text?: string; usage?: Usage } | undefined;
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed" || event.type === "response.incomplete")
        completed = event.response as never;
    }
    // Greedy decoding: the stream says exactly what the plain call said.
    expect(text).toBe(plain.output_text);
    expect(completed?.usage?.output_tokens).toBe(plain.usage?.output_tokens);
  });

  test("chat.completions streams", async () => {
    const stream = await t.client.chat.completions.create({
      model: "",
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    let chunks = 0;
    let completion = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.usage) completion = chunk.usage.completion_tokens;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(completion).toBeGreaterThan(0);
  });

  test("WebSocket: a pre-warmed conversation's follow-up evaluates only the new tokens", async () => {
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      const system = "You are Spark, a coding assistant. Make minimal edits. ".repeat(20);
      ws.send({
        type: "response.create",
        model: "",
        generate: false,
        store: false,
        input: [{ role: "developer", content: system }],
      });
      const warm = (await log.end()).response as { id: string; usage: Usage };
      expect(warm.usage.output_tokens).toBe(0);

      let mark = log.events.length;
      ws.send({
        type: "response.create",
        model: "",
        store: false,
        previous_response_id: warm.id,
        input: "Rename x to y.",
        max_output_tokens: 8,
      });
      const first = (await log.end(mark)).response as { id: string; usage: Usage };
      // All of the pre-warmed system prompt was reused.
      expect(first.usage.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(
        warm.usage.input_tokens - 8,
      );

      mark = log.events.length;
      ws.send({
        type: "response.create",
        model: "",
        store: false,
        previous_response_id: first.id,
        input: "Thanks.",
        max_output_tokens: 4,
      });
      const second = (await log.end(mark)).response as { usage: Usage };
      const newTokens = second.usage.input_tokens - second.usage.input_tokens_details.cached_tokens;
      expect(second.usage.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(
        first.usage.input_tokens + first.usage.output_tokens - 1,
      );
      expect(newTokens).toBeLessThan(30);
    } finally {
      ws.close();
    }
  });

  test("WebSocket: cancel and steer on the real engine", async ({ onTestFailed }) => {
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    // A wait that never ends shows only as a timeout: the events received say which one it was.
    onTestFailed(() => console.error(`events received: ${log.summary()}`));
    // A random model may end a reply after a token or two, before a cancel or a steer reaches it
    // (or before any text): each is tried on a few prompts until one reply is still running.
    const prompts = [
      "Write a long file.",
      "Write a long story.",
      "List every word you know.",
      "Count to a thousand.",
    ];
    const interrupt = async (
      request: (input: string) => object,
      message: (runningId: string) => object,
    ): Promise<{ ended: AnyEvent; runningId: string }> => {
      for (const input of prompts) {
        const mark = log.events.length;
        ws.send({ type: "response.create", model: "", ...request(input) } as never);
        const runningId = ((await log.type("response.created", mark)).response as { id: string }).id;
        const first = await log.next((e) => e.type === "response.output_text.delta" || isEnd(e), mark);
        if (isEnd(first)) continue;
        ws.sendRaw(JSON.stringify(message(runningId)));
        const ended = await log.end(mark);
        if (ended.type === "response.incomplete") return { ended, runningId };
      }
      throw new Error(`every reply ended by itself first: ${log.summary()}`);
    };
    try {
      const { ended: cancelled } = await interrupt(
        (input) => ({ input, max_output_tokens: 400 }),
        () => ({ type: "response.cancel" }),
      );
      const cancelledResponse = cancelled.response as {
        id: string;
        usage: Usage;
        incomplete_details: { reason: string };
      };
      expect(cancelledResponse.incomplete_details.reason).toBe("cancelled");
      expect(cancelledResponse.usage.output_tokens).toBeLessThan(400);

      // A follow-up of the cancelled response starts from its live state.
      let mark = log.events.length;
      ws.send({
        type: "response.create",
        model: "",
        previous_response_id: cancelledResponse.id,
        input: "Go on.",
        max_output_tokens: 4,
      });
      const followUp = (await log.end(mark)).response as { usage: Usage };
      expect(followUp.usage.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(
        cancelledResponse.usage.input_tokens + cancelledResponse.usage.output_tokens - 1,
      );

      // Steered on a fresh conversation: the cut above moves with timing, and a reply chained on it
      // varies with where it fell.
      const { ended: steered, runningId } = await interrupt(
        (input) => ({ input, max_output_tokens: 400 }),
        (id) => ({ type: "response.steer", previous_response_id: id, input: "Make it shorter." }),
      );
      expect((steered.response as { incomplete_details: { reason: string } }).incomplete_details.reason).toBe(
        "steered",
      );
      const steeredUsage = (steered.response as { usage: Usage }).usage;

      mark = log.events.indexOf(steered);
      const successor = await log.type("response.created", mark);
      expect((successor.response as { previous_response_id: string }).previous_response_id).toBe(runningId);
      const done = (await log.end(log.events.indexOf(successor))).response as { usage: Usage };
      // The continuation starts from the live state: the steered prompt and its partial output are cached.
      expect(done.usage.input_tokens_details.cached_tokens).toBeGreaterThanOrEqual(
        steeredUsage.input_tokens + steeredUsage.output_tokens - 1,
      );
    } finally {
      ws.close();
    }
  });
});
