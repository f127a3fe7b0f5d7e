import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { startTestServer, type TestServer } from "../test-support/test-server.js";
import { EventLog } from "../test-support/ws-events.js";
import type { AdmissionConfig } from "./scheduler.js";

const long = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");

/** A server whose scripted model streams a long reply at 50 tokens/s, behind `admission`. */
function slowServer(admission: AdmissionConfig, apiKeys?: string[]): Promise<TestServer> {
  return startTestServer(new ScriptedEngine({ tokensPerSecond: 50, script: () => ({ text: long }) }), {
    admission,
    ...(apiKeys ? { apiKeys } : {}),
  });
}

/** A WebSocket-mode connection with its event log. */
function connect(t: TestServer, apiKey?: string) {
  const client = apiKey ? new OpenAI({ baseURL: `${t.url}/v1`, apiKey, maxRetries: 0 }) : t.client;
  const ws = new ResponsesWS(client);
  const log = new EventLog(ws);
  return { ws, log, [Symbol.dispose]: () => ws.close() };
}

function post(t: TestServer, path: string, body: object, apiKey = "unused"): Promise<Response> {
  return fetch(`${t.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
    body: JSON.stringify(body),
  });
}

describe("admission control in the server", () => {
  test("WebSocket: a queued response is created `queued`, told its place as it changes, then runs", async () => {
    await using t = await slowServer({ maxConcurrent: 1 });
    using a = connect(t);
    using b = connect(t);
    using c = connect(t);
    a.ws.send({ type: "response.create", model: "scripted", input: "first" });
    await a.log.type("response.output_text.delta");

    b.ws.send({ type: "response.create", model: "scripted", input: "second" });
    // Each log holds one response's events: look from the start (`0`), as events may already be in.
    const created = await b.log.type("response.created", 0);
    expect((created.response as { status: string }).status).toBe("queued");
    expect(await b.log.type("response.queued", 0)).toMatchObject({
      position: 1,
      response: { status: "queued" },
    });
    c.ws.send({ type: "response.create", model: "scripted", input: "third" });
    expect(await c.log.type("response.queued", 0)).toMatchObject({ position: 2 });

    a.ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
    expect(await a.log.end(0)).toMatchObject({ type: "response.incomplete" });
    const running = await b.log.type("response.in_progress", 0);
    expect((running.response as { status: string }).status).toBe("in_progress");
    expect(await c.log.next((e) => e.type === "response.queued" && e.position === 1, 0)).toBeTruthy();

    // A queued response can be cancelled: it ends incomplete, having generated nothing.
    c.ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
    const cancelled = await c.log.end(0);
    expect(cancelled).toMatchObject({
      type: "response.incomplete",
      response: { incomplete_details: { reason: "cancelled" }, usage: { output_tokens: 0 } },
    });
    b.ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
    await b.log.end(0);
    expect(c.log.events.filter((e) => e.type === "response.in_progress")).toEqual([]);
  });

  test("HTTP: a full queue answers 429 with Retry-After on both APIs; the queued request still runs", async () => {
    await using t = await slowServer({ maxConcurrent: 1, maxQueue: 1 });
    using running = connect(t);
    using queued = connect(t);
    running.ws.send({ type: "response.create", model: "scripted", input: "run" });
    await running.log.type("response.output_text.delta");
    queued.ws.send({ type: "response.create", model: "scripted", input: "wait", max_output_tokens: 2 });
    await queued.log.type("response.queued", 0);

    for (const [path, body] of [
      ["/v1/responses", { model: "scripted", input: "no room" }],
      ["/v1/chat/completions", { model: "scripted", messages: [{ role: "user", content: "no room" }] }],
    ] as const) {
      const response = await post(t, path, body);
      expect(response.status).toBe(429);
      expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(response.headers.get("x-request-id")).toMatch(/^req_/);
      expect(await response.json()).toMatchObject({
        error: { code: "queue_full", type: "rate_limit_error" },
      });
    }
    // Over WebSocket the refusal is an error event; the connection stays usable.
    using third = connect(t);
    third.ws.send({ type: "response.create", model: "scripted", input: "no room" });
    expect(await third.log.type("error", 0)).toMatchObject({ status: 429, error: { code: "queue_full" } });

    running.ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
    expect(await queued.log.end(0)).toMatchObject({
      type: "response.incomplete",
      response: { status: "incomplete" },
    });
    expect(queued.log.events.map((e) => e.type)).toContain("response.output_text.delta");
  });

  test("a request that waits past its deadline gets a clear queue_timeout: failed over WebSocket, 503 over HTTP", async () => {
    await using t = await slowServer({ maxConcurrent: 1, queueTimeoutMs: 100 });
    using running = connect(t);
    running.ws.send({ type: "response.create", model: "scripted", input: "run" });
    await running.log.type("response.output_text.delta");

    using waiting = connect(t);
    waiting.ws.send({ type: "response.create", model: "scripted", input: "wait" });
    const failed = await waiting.log.end(0);
    expect(failed).toMatchObject({ type: "response.failed", response: { error: { code: "queue_timeout" } } });
    expect((failed.response as { error: { message: string } }).error.message).toMatch(/waited 100 ms/);

    const response = await post(t, "/v1/responses", { model: "scripted", input: "wait" });
    expect(response.status).toBe(503);
    expect(response.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await response.json()).toMatchObject({ error: { code: "queue_timeout" } });
    running.ws.sendRaw(JSON.stringify({ type: "response.cancel" }));
    await running.log.end(0);
  });

  test("requests per minute are limited per API key: 429 with Retry-After for one key, the other goes on", async () => {
    await using t = await startTestServer(new ScriptedEngine(), {
      apiKeys: ["key-a", "key-b"],
      admission: { requestsPerMinute: 2 },
    });
    const ask = (key: string) =>
      post(t, "/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }, key);
    expect((await ask("key-a")).status).toBe(200);
    expect((await ask("key-a")).status).toBe(200);
    const limited = await ask("key-a");
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(29);
    expect(await limited.json()).toMatchObject({ error: { code: "rate_limited" } });
    expect((await ask("key-b")).status).toBe(200);

    using ws = connect(t, "key-a");
    ws.ws.send({ type: "response.create", model: "scripted", input: "hi" });
    expect(await ws.log.type("error", 0)).toMatchObject({ status: 429, error: { code: "rate_limited" } });
  });

  test("tokens per minute are charged from usage after each response", async () => {
    await using t = await startTestServer(new ScriptedEngine({ script: () => ({ text: long }) }), {
      apiKeys: ["key-a"],
      admission: { tokensPerMinute: 100 },
    });
    const client = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "key-a", maxRetries: 0 });
    const first = await client.responses.create({ model: "scripted", input: "hi" });
    expect(first.usage!.output_tokens).toBeGreaterThan(100);
    const error = await client.responses
      .create({ model: "scripted", input: "again" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 429, code: "rate_limited" });
  });
});
