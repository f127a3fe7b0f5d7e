import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import { startTestServer } from "../../server/test-support/test-server.js";
import { EventLog } from "../../server/test-support/ws-events.js";
import { startStallingUpstream } from "./test-support/stalling-upstream.js";
import { UpstreamEngine } from "./upstream-engine.js";

/**
 * What a router in front of the replicas needs from Spark: the conversation in a header on every
 * request, load shedding (429, or 503 with Retry-After) passed on to the client with the same
 * Retry-After and nothing marked down, and no health checks when told so.
 */

describe("behind a router", () => {
  test("every upstream request carries the conversation in the session header and prompt_cache_key", async () => {
    await using upstream = await startStallingUpstream(["ok"]);
    await using engine = new UpstreamEngine({ replicas: [upstream.url], model: "m", healthChecks: false });
    await using t = await startTestServer(engine);
    const first = await t.client.responses.create({ model: "m", input: "hello" });
    await t.client.responses.create({ model: "m", input: "again", previous_response_id: first.id });
    const [one, two] = upstream.requests;
    expect(one?.headers["x-session-id"]).toBeTruthy();
    expect(two?.headers["x-session-id"]).toBe(one?.headers["x-session-id"]);

    await using named = new UpstreamEngine({
      replicas: [upstream.url],
      model: "m",
      healthChecks: false,
      sessionHeader: "x-conversation",
    });
    for await (const _ of named.generate({
      messages: [{ role: "user", content: "hi" }],
      conversation: "c-1",
    })) {
    }
    expect(upstream.requests.at(-1)?.headers["x-conversation"]).toBe("c-1");
    expect(upstream.requests.at(-1)?.headers["x-session-id"]).toBeUndefined();
  });

  test("a conversation id a header cannot carry is left out of the header, and the request still goes", async () => {
    await using upstream = await startStallingUpstream(["ok"]);
    await using engine = new UpstreamEngine({ replicas: [upstream.url], model: "m", healthChecks: false });
    let text = "";
    for await (const event of engine.generate({
      messages: [{ role: "user", content: "hi" }],
      conversation: "line\nbreak é",
    })) {
      if (event.type === "text") text += event.text;
    }
    expect(text).toBe("hi");
    expect(upstream.requests[0]?.headers["x-session-id"]).toBeUndefined();
    expect(engine.pool.replicas[0]?.healthy).toBe(true);
  });

  for (const shed of ["shed-429", "shed-503"] as const) {
    test(`${shed}: the client gets a 429 rate_limited with the same Retry-After, over HTTP and WebSocket; nothing is marked down`, async () => {
      await using upstream = await startStallingUpstream([shed]);
      await using engine = new UpstreamEngine({ replicas: [upstream.url], model: "m", healthChecks: false });
      await using t = await startTestServer(engine);

      const ask = (path: string, body: object) =>
        fetch(`${t.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: "Bearer unused" },
          body: JSON.stringify(body),
        });
      for (const [path, body] of [
        ["/v1/responses", { model: "m", input: "hi" }],
        ["/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hi" }] }],
      ] as const) {
        const refused = await ask(path, body);
        expect(refused.status).toBe(429);
        expect(refused.headers.get("retry-after")).toBe("7");
        expect(await refused.json()).toMatchObject({
          error: { code: "rate_limited", type: "rate_limit_error", retry_after_seconds: 7 },
        });
      }

      const ws = new ResponsesWS(t.client);
      const log = new EventLog(ws);
      try {
        ws.send({ type: "response.create", model: "m", input: "hi" });
        const failed = (await log.type("response.failed", 0)) as unknown as {
          response: { error: { code: string; retry_after_seconds?: number } };
        };
        expect(failed.response.error).toMatchObject({ code: "rate_limited", retry_after_seconds: 7 });
      } finally {
        ws.close();
      }
      expect(engine.pool.replicas[0]).toMatchObject({ healthy: true, lastError: null });
    });
  }

  test("a shedding replica is not marked down, and another replica takes the request", async () => {
    await using shedding = await startStallingUpstream(["shed-503"]);
    await using other = await startStallingUpstream(["ok"]);
    await using engine = new UpstreamEngine({
      replicas: [shedding.url, other.url],
      model: "m",
      healthChecks: false,
      routing: "least-loaded",
    });
    for (let i = 0; i < 2; i++) {
      let text = "";
      for await (const event of engine.generate({ messages: [{ role: "user", content: "hi" }] })) {
        if (event.type === "text") text += event.text;
      }
      expect(text).toBe("hi");
    }
    expect(shedding.requests.length).toBeGreaterThanOrEqual(1);
    expect(engine.pool.replicas.every((replica) => replica.healthy)).toBe(true);
  });

  test("with health checks off, nothing probes the upstream, at start or later", async () => {
    await using upstream = await startStallingUpstream(["ok"]);
    await using engine = await UpstreamEngine.create({
      replicas: [upstream.url],
      model: "m",
      healthChecks: false,
      healthIntervalMs: 1,
      contextSize: 4096,
    });
    await engine.pool.checkAll();
    for await (const _ of engine.generate({ messages: [{ role: "user", content: "hi" }] })) {
    }
    expect(upstream.probes).toBe(0);
    expect(upstream.requests).toHaveLength(1);

    await using checked = await UpstreamEngine.create({
      replicas: [upstream.url],
      model: "m",
      healthIntervalMs: 0,
    });
    expect(upstream.probes).toBeGreaterThan(0);
    expect(checked.pool.replicas[0]?.healthy).toBe(false);
  });
});
