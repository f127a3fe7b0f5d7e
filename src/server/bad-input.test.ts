import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "./model-registry.js";
import { SparkServer } from "./spark-server.js";
import { startTestServer, type TestServer } from "./test-support/test-server.js";

/** Raw HTTP, so tests control every byte and header. */
function post(url: string, path: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; json: { error?: Record<string, unknown> } & Record<string, unknown> }>(
    (resolve, reject) => {
      const req = request(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      });
      req.on("error", reject);
      req.end(body);
    },
  );
}

const valid = JSON.stringify({ model: "scripted", input: "still alive?" });

describe("bad HTTP input gets an OpenAI-style error and the server keeps serving", () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(new ScriptedEngine(), { maxBodyBytes: 64 * 1024 });
  });
  afterAll(async () => {
    await t.server.close();
  });

  const cases: [string, string, string, number, string, string | null][] = [
    ["malformed JSON", "/v1/responses", "{not json", 400, "invalid_json", null],
    [
      "a wrong field type",
      "/v1/responses",
      JSON.stringify({ input: "x", temperature: "hot" }),
      400,
      "invalid_request",
      "temperature",
    ],
    [
      "an out-of-range value",
      "/v1/responses",
      JSON.stringify({ input: "x", max_output_tokens: 0 }),
      400,
      "invalid_request",
      "max_output_tokens",
    ],
    [
      "a bad input item",
      "/v1/responses",
      JSON.stringify({ input: [{ role: "robot", content: "x" }] }),
      400,
      "invalid_request",
      "input[0].role",
    ],
    [
      "nesting too deep",
      "/v1/responses",
      `{"metadata":${"[".repeat(100)}${"]".repeat(100)}}`,
      400,
      "invalid_request",
      null,
    ],
    [
      "an unknown previous_response_id",
      "/v1/responses",
      JSON.stringify({ input: "x", previous_response_id: "resp_missing" }),
      400,
      "previous_response_not_found",
      "previous_response_id",
    ],
    [
      "an image for a text model",
      "/v1/responses",
      JSON.stringify({ input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] }),
      400,
      "unsupported_parameter",
      "input[0].content[0].type",
    ],
    [
      "tool_choice required without a tool",
      "/v1/responses",
      JSON.stringify({ input: "x", tool_choice: "required" }),
      400,
      "invalid_request",
      "tool_choice",
    ],
    [
      "tool_choice naming a function that is not among the tools",
      "/v1/responses",
      JSON.stringify({
        input: "x",
        tools: [{ type: "function", name: "read_file" }],
        tool_choice: { type: "function", name: "write_file" },
      }),
      400,
      "invalid_request",
      "tool_choice.name",
    ],
    [
      "a function tool_choice without a name",
      "/v1/responses",
      JSON.stringify({ input: "x", tool_choice: { type: "function" } }),
      400,
      "invalid_request",
      "tool_choice.type",
    ],
    [
      "tool_choice of a hosted tool",
      "/v1/responses",
      JSON.stringify({ input: "x", tool_choice: { type: "web_search_preview" } }),
      400,
      "unsupported_parameter",
      "tool_choice",
    ],
    [
      "chat: tool_choice naming a function that is not among the tools",
      "/v1/chat/completions",
      JSON.stringify({
        messages: [{ role: "user", content: "x" }],
        tools: [{ type: "function", function: { name: "read_file" } }],
        tool_choice: { type: "function", function: { name: "write_file" } },
      }),
      400,
      "invalid_request",
      "tool_choice.function.name",
    ],
    [
      "structured output without its schema",
      "/v1/responses",
      JSON.stringify({ input: "x", text: { format: { type: "json_schema", name: "x" } } }),
      400,
      "invalid_request",
      "text.format.schema",
    ],
    [
      "structured output with a schema nested too deep",
      "/v1/responses",
      JSON.stringify({
        input: "x",
        text: { format: { type: "json_schema", name: "x", schema: nested(25) } },
      }),
      400,
      "invalid_request",
      "text.format.schema",
    ],
    [
      "chat: an unknown response_format type",
      "/v1/chat/completions",
      JSON.stringify({ messages: [{ role: "user", content: "x" }], response_format: { type: "yaml" } }),
      400,
      "invalid_request",
      "response_format.type",
    ],
    [
      "chat: a wrong role",
      "/v1/chat/completions",
      JSON.stringify({ messages: [{ role: "robot", content: "x" }] }),
      400,
      "invalid_request",
      "messages[0].role",
    ],
    [
      "chat: n > 1",
      "/v1/chat/completions",
      JSON.stringify({ messages: [{ role: "user", content: "x" }], n: 2 }),
      400,
      "invalid_request",
      "n",
    ],
    [
      "chat: a tool output with no call",
      "/v1/chat/completions",
      JSON.stringify({ messages: [{ role: "tool", tool_call_id: "c1", content: "x" }] }),
      400,
      "invalid_request",
      "messages",
    ],
  ];

  test.each(cases)("%s", async (_name, path, body, status, code, param) => {
    const bad = await post(t.url, path, body);
    expect(bad.status).toBe(status);
    expect(bad.json.error).toMatchObject({ code, param });
    expect(typeof bad.json.error?.message).toBe("string");
    expect(typeof bad.json.error?.type).toBe("string");
    const good = await post(t.url, "/v1/responses", valid);
    expect(good.status).toBe(200);
  });

  test("an oversized body is refused with 413", async () => {
    const bad = await post(t.url, "/v1/responses", JSON.stringify({ input: "x".repeat(100 * 1024) }));
    expect(bad.status).toBe(413);
    expect(bad.json.error).toMatchObject({ code: "payload_too_large", type: "invalid_request_error" });
    expect((await post(t.url, "/v1/responses", valid)).status).toBe(200);
  });

  test("unknown routes and methods", async () => {
    expect((await post(t.url, "/v1/nothing", "{}")).json.error).toMatchObject({ code: "not_found" });
    expect((await post(t.url, "/v1/models", "{}")).status).toBe(405);
  });

  test("a request from a foreign browser origin is refused", async () => {
    const bad = await post(t.url, "/v1/responses", valid, { origin: "https://evil.example" });
    expect(bad.status).toBe(403);
    expect(bad.json.error).toMatchObject({ code: "forbidden_origin" });
    const own = await post(t.url, "/v1/responses", valid, { origin: t.url });
    expect(own.status).toBe(200);
  });
});

describe("authentication and loading", () => {
  test("API keys are required when configured", async () => {
    await using t = await startTestServer(new ScriptedEngine(), { apiKeys: ["sk-right"] });
    expect((await post(t.url, "/v1/responses", valid)).json.error).toMatchObject({ code: "unauthorized" });
    expect((await post(t.url, "/v1/responses", valid, { authorization: "Bearer sk-wrong" })).status).toBe(
      401,
    );
    expect((await post(t.url, "/v1/responses", valid, { authorization: "Bearer sk-right" })).status).toBe(
      200,
    );
    const ws = new WebSocket(`${t.url.replace("http", "ws")}/v1/responses`);
    const status = await new Promise<number>((resolve) =>
      ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(401);
  });

  test("a model that never loads: a request waits its bound, then answers model_not_loaded", async () => {
    const models = new ModelRegistry({ loadWaitMs: 50 });
    models.add("scripted", new Promise<ScriptedEngine>(() => {}));
    await using server = await SparkServer.start({ models });
    const early = await post(server.url, "/v1/responses", valid);
    // A failed run is a 500 on this path (see handleResponsesPost); the code says why.
    expect(early.status).toBe(500);
    expect(early.json.error).toMatchObject({ code: "model_not_loaded", param: "model" });
    expect(early.json.error?.message).toContain("still loading");
  });
});

describe("bad WebSocket frames get an error event and the connection stays usable", () => {
  let t: TestServer;
  beforeAll(async () => {
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    t = await startTestServer(new ScriptedEngine({ script: [{ text: words }], tokensPerSecond: 2000 }), {
      maxBodyBytes: 16 * 1024,
    });
  });
  afterAll(async () => {
    await t.server.close();
  });

  async function connect() {
    const ws = new WebSocket(`${t.url.replace("http", "ws")}/v1/responses`);
    const events: Record<string, unknown>[] = [];
    const waiters: [(e: Record<string, unknown>) => boolean, (e: Record<string, unknown>) => void][] = [];
    ws.on("message", (data) => {
      const event = JSON.parse(String(data));
      events.push(event);
      for (const [i, [match, resolve]] of waiters.entries()) {
        if (match(event)) {
          waiters.splice(i, 1);
          resolve(event);
          break;
        }
      }
    });
    await new Promise((resolve) => ws.once("open", resolve));
    const next = (match: (e: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => waiters.push([match, resolve]));
    const completes = async () => {
      const done = next((e) => e.type === "response.completed");
      ws.send(JSON.stringify({ type: "response.create", model: "scripted", input: "hi" }));
      return done;
    };
    return { ws, events, next, completes };
  }

  const frames: [string, string | Buffer, string, string | null][] = [
    ["malformed JSON", "{oops", "invalid_json", null],
    ["an unknown event type", JSON.stringify({ type: "response.explode" }), "unknown_event_type", "type"],
    ["no event type", JSON.stringify({ input: "x" }), "unknown_event_type", "type"],
    ["a wrong field type", JSON.stringify({ type: "response.create", input: 42 }), "invalid_event", "input"],
    [
      "an unknown previous_response_id",
      JSON.stringify({ type: "response.create", input: "x", previous_response_id: "resp_x" }),
      "previous_response_not_found",
      "previous_response_id",
    ],
    ["cancel with nothing running", JSON.stringify({ type: "response.cancel" }), "response_not_active", null],
    ["a binary frame", Buffer.from([1, 2, 3]), "invalid_event", null],
    [
      "an oversized frame",
      JSON.stringify({ type: "response.create", input: "x".repeat(20 * 1024) }),
      "payload_too_large",
      null,
    ],
  ];

  test.each(frames)("%s", async (_name, frame, code, param) => {
    const c = await connect();
    const error = c.next((e) => e.type === "error");
    c.ws.send(frame);
    expect(await error).toMatchObject({
      type: "error",
      error: { code, param, type: expect.any(String), message: expect.any(String) },
    });
    expect((await c.completes()).type).toBe("response.completed");
    c.ws.close();
  });

  test("a second response.create while one is in flight is refused; the first goes on", async () => {
    const c = await connect();
    const first = c.next((e) => e.type === "response.completed");
    c.ws.send(JSON.stringify({ type: "response.create", model: "scripted", input: "one" }));
    await c.next((e) => e.type === "response.output_text.delta");
    const error = c.next((e) => e.type === "error");
    c.ws.send(JSON.stringify({ type: "response.create", model: "scripted", input: "two" }));
    expect(await error).toMatchObject({ error: { code: "response_in_progress" } });
    const done = (await first).response as { usage: { output_tokens: number } };
    expect(done.usage.output_tokens).toBe(200);
    c.ws.close();
  });

  test("a frame beyond the hard limit closes the connection with 1009", async () => {
    const c = await connect();
    const closed = new Promise<number>((resolve) => c.ws.on("close", (code) => resolve(code)));
    c.ws.send("x".repeat(16 * 1024 * 4 + 1));
    expect(await closed).toBe(1009);
  });

  test("a WebSocket upgrade from a foreign Origin is refused", async () => {
    const ws = new WebSocket(`${t.url.replace("http", "ws")}/v1/responses`, {
      origin: "https://evil.example",
    });
    const status = await new Promise<number>((resolve) =>
      ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(403);
    const own = new WebSocket(`${t.url.replace("http", "ws")}/v1/responses`, { origin: t.url });
    await new Promise((resolve) => own.once("open", resolve));
    own.close();
  });
});

/** A schema `depth` objects deep (`{items: {items: ...}}`). */
function nested(depth: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: "string" };
  for (let i = 1; i < depth; i++) schema = { items: schema };
  return schema;
}
