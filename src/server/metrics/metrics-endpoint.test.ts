import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { startTestServer, type TestServer } from "../test-support/test-server.js";
import { EventLog } from "../test-support/ws-events.js";

/** One line of the text exposition: a comment, or `name{labels} value`. */
const SAMPLE =
  /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:\\.|[^"\\])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:\\.|[^"\\])*")*\})? (?:[-+]?[0-9.]+(?:e[-+]?[0-9]+)?|\+Inf|-Inf|NaN)$/;

/** Parses the exposition strictly: every line is HELP/TYPE or a sample of a declared metric. */
function parseMetrics(text: string): Map<string, number> {
  expect(text.endsWith("\n")).toBe(true);
  const declared = new Set<string>();
  const samples = new Map<string, number>();
  for (const line of text.trimEnd().split("\n")) {
    const meta = /^# (HELP|TYPE) (\S+) (.+)$/.exec(line);
    if (meta) {
      if (meta[1] === "TYPE") {
        expect(["counter", "gauge", "histogram"]).toContain(meta[3]);
        declared.add(meta[2]!);
      }
      continue;
    }
    expect(line).toMatch(SAMPLE);
    const name = line.split(/[{ ]/)[0]!;
    expect(declared.has(name.replace(/_(bucket|sum|count)$/, "")) || declared.has(name)).toBe(true);
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

/** Collects log lines; `next` waits for the next one without sleeping. */
function lineCollector() {
  const lines: Record<string, unknown>[] = [];
  let waiters: (() => void)[] = [];
  return {
    lines,
    write: (line: string) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
      for (const wake of waiters.splice(0)) wake();
    },
    async until(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
      for (;;) {
        const found = lines.find(match);
        if (found) return found;
        await new Promise<void>((resolve) => waiters.push(resolve));
        waiters = waiters.filter(Boolean);
      }
    },
  };
}

async function metricsOf(t: TestServer, apiKey?: string): Promise<Response> {
  return fetch(`${t.url}/metrics`, apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : {});
}

describe("GET /metrics and request logs", () => {
  test("the exposition parses and has every series after some traffic", async () => {
    const reply = "const x = 1; const y = 2;";
    await using t = await startTestServer(new ScriptedEngine({ script: () => ({ text: reply }) }), {
      admission: { maxConcurrent: 4 },
    });
    await t.client.responses.create({ model: "scripted", input: "hi" });
    await t.client.chat.completions.create({
      model: "scripted",
      messages: [{ role: "user", content: "edit" }],
      prediction: { type: "content", content: "const x = 1; const z = 3;" },
    });
    const bad = await fetch(`${t.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(bad.status).toBe(400);

    const response = await metricsOf(t);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const samples = parseMetrics(await response.text());
    const labels = 'model="scripted",tier="default"';
    expect(samples.get(`spark_requests_total{${labels},outcome="stop"}`)).toBe(2);
    expect(samples.get(`spark_time_to_first_token_seconds_count{${labels}}`)).toBe(2);
    expect(samples.get(`spark_time_to_first_token_seconds_bucket{${labels},le="+Inf"}`)).toBe(2);
    expect(samples.get(`spark_tokens_per_second_count{${labels}}`)).toBe(2);
    expect(samples.get(`spark_queue_wait_seconds_count{${labels}}`)).toBe(2);
    expect(samples.get(`spark_queue_depth{${labels}}`)).toBe(0);
    expect(samples.get(`spark_active_streams{${labels}}`)).toBe(0);
    expect(samples.get(`spark_output_tokens_total{${labels}}`)).toBe(16);
    expect(samples.get(`spark_prediction_tokens_total{${labels},result="accepted"}`)).toBe(6);
    expect(samples.get(`spark_prediction_tokens_total{${labels},result="rejected"}`)).toBe(2);
    expect(samples.get('spark_errors_total{model="",tier="default",code="invalid_json"}')).toBe(1);
  });

  test("counts admission rejections and engine failures by code", async () => {
    await using t = await startTestServer(
      new ScriptedEngine({ tokensPerSecond: 50, script: () => ({ text: "a b c d e f g h i j" }) }),
      { admission: { maxConcurrent: 1, maxQueue: 0 } },
    );
    const running = await t.client.responses.create({ model: "scripted", input: "x", stream: true });
    const iterator = running[Symbol.asyncIterator]();
    while ((await iterator.next()).value?.type !== "response.output_text.delta");
    const refused = await t.client.responses
      .create({ model: "scripted", input: "y" })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 429 });
    await iterator.return?.();
    const samples = parseMetrics(await (await metricsOf(t)).text());
    const labels = 'model="scripted",tier="default"';
    expect(samples.get(`spark_requests_total{${labels},outcome="rejected"}`)).toBe(1);
    expect(samples.get(`spark_errors_total{${labels},code="queue_full"}`)).toBe(1);
  });

  test("needs the API key like /v1, unless metricsPublic", async () => {
    await using closed = await startTestServer(new ScriptedEngine(), { apiKeys: ["k"] });
    expect((await metricsOf(closed)).status).toBe(401);
    expect((await metricsOf(closed, "k")).status).toBe(200);
    await using open = await startTestServer(new ScriptedEngine(), { apiKeys: ["k"], metricsPublic: true });
    expect((await metricsOf(open)).status).toBe(200);
  });

  test("each request has an id (x-request-id) and one JSON log line carrying it", async () => {
    const log = lineCollector();
    await using t = await startTestServer(new ScriptedEngine(), {
      log: { format: "json", write: log.write },
    });
    const response = await fetch(`${t.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "hi" }] }),
    });
    await response.json();
    const id = response.headers.get("x-request-id");
    expect(id).toMatch(/^req_[0-9a-f]{24}$/);
    const line = await log.until((l) => l.request_id === id);
    expect(line).toMatchObject({
      level: "info",
      transport: "http",
      method: "POST",
      path: "/v1/chat/completions",
      status: 200,
      model: "scripted",
      tier: "default",
      key: "anonymous",
      output_tokens: 3,
      stop_reason: "stop",
    });
    expect(typeof line.time).toBe("string");
    expect(line.ttft_ms).toBeGreaterThanOrEqual(0);
    expect(line.duration_ms).toBeGreaterThanOrEqual(0);

    // A proxy's request id is kept.
    const proxied = await fetch(`${t.url}/v1/models`, { headers: { "x-request-id": "edge-42" } });
    expect(proxied.headers.get("x-request-id")).toBe("edge-42");
    await log.until((l) => l.request_id === "edge-42" && l.status === 200);

    const refused = await fetch(`${t.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    const refusedId = refused.headers.get("x-request-id");
    expect(await log.until((l) => l.request_id === refusedId)).toMatchObject({
      level: "warn",
      status: 400,
      error_code: "invalid_json",
    });

    // Over WebSocket: one line per response, with its response id.
    const client = new OpenAI({ baseURL: `${t.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const ws = new ResponsesWS(client);
    const events = new EventLog(ws);
    ws.send({ type: "response.create", model: "scripted", input: "over ws" });
    const created = await events.type("response.created", 0);
    const responseId = (created.response as { id: string }).id;
    expect(await log.until((l) => l.response_id === responseId)).toMatchObject({
      transport: "ws",
      status: "completed",
      model: "scripted",
      output_tokens: 4,
    });
    ws.close();
  });
});
