import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { tinyModelWithTemplate } from "../engine/test-support/chat-templates.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";

/**
 * Forced tool calls from a real (random-weight) model behind the server, through the official SDK:
 * the engine's grammar makes the call, the server streams its arguments as they are sampled.
 */
const pick = {
  name: "pick",
  description: "Picks a mode.",
  parameters: {
    type: "object",
    properties: { mode: { type: "string", enum: ["fast", "slow"] }, count: { type: "integer" } },
    required: ["mode", "count"],
    additionalProperties: false,
  },
};

describe("forced tool calls on the llama engine (Qwen2.5 template) over the SDK", () => {
  let t: TestServer;
  let engine: LlamaEngine;
  beforeAll(async () => {
    engine = await LlamaEngine.create({
      modelPath: await tinyModelWithTemplate("Qwen-Qwen2.5-7B-Instruct.jinja"),
      contextSize: 2048,
    });
    t = await startTestServer(engine);
  });
  afterAll(async () => {
    await t?.server.close();
    await engine?.dispose();
  });

  test("Responses, a named function: its arguments stream as deltas and parse to the schema", async () => {
    const stream = await t.client.responses.create({
      model: "",
      input: "Pick one.",
      tools: [{ type: "function", strict: true, ...pick }],
      tool_choice: { type: "function", name: "pick" },
      max_output_tokens: 256,
      stream: true,
    });
    // A random-weight model may go on after the forced call (more calls, text): follow each call.
    const streamed = new Map<string, string[]>();
    const finished: { id: string; name: string; arguments: string; status?: string }[] = [];
    for await (const event of stream) {
      if (event.type === "response.function_call_arguments.delta")
        streamed.set(event.item_id, [...(streamed.get(event.item_id) ?? []), event.delta]);
      if (event.type === "response.output_item.done" && event.item.type === "function_call")
        finished.push(event.item as (typeof finished)[number]);
    }
    const [first] = finished;
    expect(first).toMatchObject({ name: "pick", status: "completed" });
    expect(streamed.get(first?.id ?? "")?.length).toBeGreaterThan(1);
    for (const call of finished) expect(streamed.get(call.id)?.join("")).toBe(call.arguments);
    const args = JSON.parse(first?.arguments ?? "") as { mode: unknown; count: unknown };
    expect(["fast", "slow"]).toContain(args.mode);
    expect(Number.isInteger(args.count)).toBe(true);
  });

  test("Chat Completions, required: a tool_calls stream whose pieces make the call", async () => {
    const stream = await t.client.chat.completions.create({
      model: "",
      messages: [{ role: "user", content: "Pick one." }],
      tools: [{ type: "function", function: pick }],
      tool_choice: "required",
      max_tokens: 256,
      stream: true,
    });
    const calls: { id: string; name: string; arguments: string; pieces: number }[] = [];
    let finish: string | null = null;
    for await (const chunk of stream) {
      for (const part of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (part.id)
          calls[part.index] = { id: part.id, name: part.function?.name ?? "", arguments: "", pieces: 0 };
        const call = calls[part.index];
        if (!call || !part.function?.arguments) continue;
        call.arguments += part.function.arguments;
        call.pieces++;
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(calls[0]?.name).toBe("pick");
    expect(calls[0]?.pieces).toBeGreaterThan(1);
    expect(Object.keys(JSON.parse(calls[0]?.arguments ?? "") as object).sort()).toEqual(["count", "mode"]);
    // Random weights may run on past the call into the token limit.
    expect(["tool_calls", "length"]).toContain(finish);
  });
});
