import { ResponsesWS } from "openai/resources/responses/ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";
import { EventLog } from "./test-support/ws-events.js";

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

  test("WebSocket: cancel and steer on the real engine", async () => {
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "", input: "Write a long file.", max_output_tokens: 400 });
      await log.type("response.output_text.delta");
      ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
      const cancelled = await log.end();
      expect(cancelled.type).toBe("response.incomplete");
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

      // Steered on a fresh conversation: a random model's greedy reply is the same every run only
      // for the same prompt, and the cut above moves with timing (a reply that ended by itself
      // before the steer could not be steered).
      mark = log.events.length;
      ws.send({ type: "response.create", model: "", input: "Now a function.", max_output_tokens: 400 });
      const created = await log.type("response.created", mark);
      const runningId = (created.response as { id: string }).id;
      await log.type("response.output_text.delta", mark);
      ws.send({ type: "response.steer", previous_response_id: runningId, input: "Make it shorter." });
      const steered = await log.end(mark);
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
