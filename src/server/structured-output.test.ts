import { zodResponseFormat, zodTextFormat } from "openai/helpers/zod";
import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import { z } from "zod";
import type { Engine, GenerateRequest } from "../engine/engine.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { chatCompletionBody } from "../engine/upstream/internal/chat-wire.js";
import type { OutputFormat } from "../protocol/output-format.js";
import { checkOutputFormat } from "./structured-output.js";
import { startTestServer } from "./test-support/test-server.js";
import { EventLog } from "./test-support/ws-events.js";

const Weather = z.object({ city: z.string().max(20), celsius: z.number().int(), sunny: z.boolean() });
const ANSWER = { city: "Oslo", celsius: -3, sunny: false };

/** A scripted engine that answers with `ANSWER` as JSON and remembers each request's format. */
function jsonEngine(): { engine: ScriptedEngine; formats: (OutputFormat | undefined)[] } {
  const formats: (OutputFormat | undefined)[] = [];
  const engine = new ScriptedEngine({
    script: (request: GenerateRequest) => {
      formats.push(request.format);
      return { text: JSON.stringify(ANSWER) };
    },
  });
  return { engine, formats };
}

/** The format as `zodTextFormat` sends it, which the engine must receive unchanged. */
const WEATHER_FORMAT = zodTextFormat(Weather, "weather");

describe("structured output over the Responses API (scripted engine)", () => {
  test("responses.parse: the engine gets the schema, the response echoes text.format, the SDK parses", async () => {
    const { engine, formats } = jsonEngine();
    await using t = await startTestServer(engine);
    const response = await t.client.responses.parse({
      model: "scripted",
      input: "Weather in Oslo?",
      text: { format: WEATHER_FORMAT },
    });
    expect(response.output_parsed).toEqual(ANSWER);
    expect(formats).toEqual([
      { type: "json_schema", name: "weather", schema: WEATHER_FORMAT.schema, strict: true },
    ]);
    expect(response.text?.format).toEqual({
      type: "json_schema",
      name: "weather",
      schema: WEATHER_FORMAT.schema,
      strict: true,
    });
  });

  test("responses.stream: output_text deltas, and the final response parsed", async () => {
    const { engine } = jsonEngine();
    await using t = await startTestServer(engine);
    const stream = t.client.responses.stream({
      model: "scripted",
      input: "Weather in Oslo?",
      text: { format: WEATHER_FORMAT },
    });
    let streamed = "";
    for await (const event of stream)
      if (event.type === "response.output_text.delta") streamed += event.delta;
    const final = await stream.finalResponse();
    expect(streamed).toBe(JSON.stringify(ANSWER));
    expect(final.output_parsed).toEqual(ANSWER);
  });

  test("json_object reaches the engine; plain text sends no format and echoes {type: text}", async () => {
    const { engine, formats } = jsonEngine();
    await using t = await startTestServer(engine);
    await t.client.responses.create({
      model: "scripted",
      input: "x",
      text: { format: { type: "json_object" } },
    });
    const plain = await t.client.responses.create({ model: "scripted", input: "x" });
    expect(formats).toEqual([{ type: "json_object" }, undefined]);
    expect(plain.text?.format).toEqual({ type: "text" });
  });

  test("WebSocket mode: response.create carries text.format to the engine and the response echoes it", async () => {
    const { engine, formats } = jsonEngine();
    await using t = await startTestServer(engine);
    const ws = new ResponsesWS(t.client);
    const log = new EventLog(ws);
    try {
      ws.send({ type: "response.create", model: "scripted", input: "x", text: { format: WEATHER_FORMAT } });
      const end = await log.end();
      expect(end.type).toBe("response.completed");
      expect((end.response as { text: unknown }).text).toEqual({ format: WEATHER_FORMAT });
      expect(formats[0]).toMatchObject({ type: "json_schema", name: "weather" });

      // A schema the grammar cannot enforce: an error event naming the keyword, nothing generated.
      ws.send({
        type: "response.create",
        model: "scripted",
        input: "x",
        text: { format: { type: "json_schema", name: "mail", schema: { type: "string", format: "email" } } },
      });
      const error = await log.type("error");
      expect(error.error).toMatchObject({ code: "invalid_request", param: "text.format.schema.format" });
      expect(formats).toHaveLength(1);
      // The SDK reports an error event to its error listeners too.
      expect(log.errors.map((e) => e.message)).toEqual([
        expect.stringContaining("text.format.schema.format"),
      ]);
    } finally {
      ws.close();
    }
  });

  test("a schema feature the grammar cannot enforce is a 400 naming it", async () => {
    const { engine, formats } = jsonEngine();
    await using t = await startTestServer(engine);
    const Email = z.object({ to: z.email() });
    await expect(
      t.client.responses.parse({
        model: "scripted",
        input: "x",
        text: { format: zodTextFormat(Email, "mail") },
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: { type: "invalid_request_error", param: "text.format.schema.properties.to.format" },
    });
    expect(formats).toEqual([]);
    // Streamed, the refusal is the HTTP answer too: nothing was started, so no event stream opens.
    await expect(
      t.client.responses.create({
        model: "scripted",
        input: "x",
        stream: true,
        text: { format: zodTextFormat(Email, "mail") },
      }),
    ).rejects.toMatchObject({ status: 400, error: { param: "text.format.schema.properties.to.format" } });
    expect(formats).toEqual([]);
  });
});

describe("structured output over Chat Completions (scripted engine)", () => {
  test("chat.completions.parse: the engine gets the schema, the SDK parses", async () => {
    const { engine, formats } = jsonEngine();
    await using t = await startTestServer(engine);
    const completion = await t.client.chat.completions.parse({
      model: "scripted",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      response_format: zodResponseFormat(Weather, "weather"),
    });
    expect(completion.choices[0]?.message.parsed).toEqual(ANSWER);
    expect(formats[0]).toEqual({
      type: "json_schema",
      name: "weather",
      schema: zodResponseFormat(Weather, "weather").json_schema.schema,
      strict: true,
    });
  });

  test("streamed: content deltas, and the final completion parsed", async () => {
    const { engine, formats } = jsonEngine();
    await using t = await startTestServer(engine);
    const stream = t.client.chat.completions.stream({
      model: "scripted",
      messages: [{ role: "user", content: "Weather in Oslo?" }],
      response_format: zodResponseFormat(Weather, "weather"),
    });
    let streamed = "";
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? "";
    const final = await stream.finalChatCompletion();
    expect(streamed).toBe(JSON.stringify(ANSWER));
    expect(final.choices[0]?.message.parsed).toEqual(ANSWER);
    expect(formats).toHaveLength(1);
  });

  test("an unenforceable feature is a 400 naming it under response_format.json_schema", async () => {
    const { engine } = jsonEngine();
    await using t = await startTestServer(engine);
    await expect(
      t.client.chat.completions.create({
        model: "scripted",
        messages: [{ role: "user", content: "x" }],
        response_format: {
          type: "json_schema",
          json_schema: {
            name: "n",
            schema: { type: "object", properties: { n: { type: "number", maximum: 9 } } },
          },
        },
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: { param: "response_format.json_schema.schema.properties.n.maximum" },
    });
  });
});

describe("upstream engines", () => {
  const upstream = { info: { id: "up", engine: "upstream", contextSize: 4096 } } as unknown as Engine;
  const format: OutputFormat = {
    type: "json_schema",
    name: "mail",
    schema: { type: "string", format: "email", pattern: "@" },
    strict: true,
  };

  test("a schema goes to an upstream unchanged, as its response_format, and is not judged here", () => {
    expect(() => checkOutputFormat(upstream, format, "text.format")).not.toThrow();
    const body = chatCompletionBody({ messages: [{ role: "user", content: "x" }], format }, "m");
    expect(body.response_format).toEqual({
      type: "json_schema",
      json_schema: { name: "mail", schema: format.schema, strict: true },
    });
    const object = chatCompletionBody({ messages: [], format: { type: "json_object" } }, "m");
    expect(object.response_format).toEqual({ type: "json_object" });
  });
});
