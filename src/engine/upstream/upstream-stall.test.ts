import { describe, expect, test } from "vitest";
import { SparkError } from "../../protocol/errors.js";
import { startTestServer } from "../../server/test-support/test-server.js";
import type { EngineEvent } from "../engine.js";
import { startStallingUpstream } from "./test-support/stalling-upstream.js";
import { UpstreamEngine } from "./upstream-engine.js";

/**
 * An upstream that stops writing must not hold a request forever: each wait for a chunk is bounded,
 * the request is closed (the upstream sees its connection end), and the caller gets another
 * replica's answer or a clear error. Timeouts are small here; the servers simply never write.
 */

const ask = { messages: [{ role: "user" as const, content: "hello" }] };

/** Runs a generation to its end: the text it produced, and the error it ended with, if any. */
async function run(engine: UpstreamEngine): Promise<{ text: string; error?: SparkError }> {
  let text = "";
  try {
    for await (const event of engine.generate(ask) as AsyncIterable<EngineEvent>) {
      if (event.type === "text") text += event.text;
    }
  } catch (error) {
    if (!(error instanceof SparkError)) throw error;
    return { text, error };
  }
  return { text };
}

describe("a stalled upstream ends", () => {
  test("a replica that stalls after its headers is closed and the request moves to another", async () => {
    await using stalled = await startStallingUpstream(["headers"]);
    await using healthy = await startStallingUpstream(["ok"]);
    await using engine = new UpstreamEngine({
      replicas: [stalled.url, healthy.url],
      model: "m",
      healthIntervalMs: 0,
      firstChunkTimeoutMs: 300,
    });
    expect(await run(engine)).toEqual({ text: "hi" });
    await stalled.requests[0]!.closed;
    const [first, second] = engine.pool.replicas;
    expect(first).toMatchObject({ healthy: false, inFlight: 0 });
    expect(first!.lastError).toMatch(/sent nothing for 300 ms before its first output/);
    expect(second).toMatchObject({ healthy: true, inFlight: 0 });
  });

  test("an upstream that never answers at all fails with upstream_timeout when no replica is left", async () => {
    await using stalled = await startStallingUpstream(["silent"]);
    await using engine = new UpstreamEngine({
      replicas: [stalled.url],
      model: "m",
      healthIntervalMs: 0,
      firstChunkTimeoutMs: 200,
    });
    const { text, error } = await run(engine);
    expect(text).toBe("");
    expect(error).toMatchObject({ code: "upstream_timeout", status: 504 });
    await stalled.requests[0]!.closed;
  });

  test("one that stalls after its first output fails with upstream_timeout and closes the request", async () => {
    await using stalled = await startStallingUpstream(["first-chunk"]);
    await using healthy = await startStallingUpstream(["ok"]);
    await using engine = new UpstreamEngine({
      replicas: [stalled.url, healthy.url],
      model: "m",
      healthIntervalMs: 0,
      idleTimeoutMs: 200,
    });
    const { text, error } = await run(engine);
    // Output reached the caller, so the response cannot move to the other replica.
    expect(text).toBe("Hel");
    expect(error?.code).toBe("upstream_timeout");
    expect(error?.message).toMatch(/sent nothing for 200 ms mid-response \(after 1 output chunks\)/);
    await stalled.requests[0]!.closed;
    expect(healthy.requests).toHaveLength(0);
    expect(engine.pool.replicas[0]).toMatchObject({ healthy: false, inFlight: 0 });
  });

  test("an endless line is an upstream_error once past the cap, not unbounded buffering", async () => {
    await using endless = await startStallingUpstream(["endless-line"]);
    await using engine = new UpstreamEngine({
      replicas: [endless.url],
      model: "m",
      healthIntervalMs: 0,
      maxEventBytes: 64 * 1024,
    });
    const { text, error } = await run(engine);
    expect(text).toBe("");
    expect(error?.code).toBe("upstream_error");
    expect(error?.message).toMatch(/stream event longer than 65536 bytes/);
    await endless.requests[0]!.closed;
    expect(engine.pool.replicas[0]).toMatchObject({ healthy: false, inFlight: 0 });
  });

  test("through the server, a stalled request gives back its admission slot", async () => {
    await using upstream = await startStallingUpstream(["first-chunk", "ok"]);
    await using engine = new UpstreamEngine({
      replicas: [upstream.url],
      model: "m",
      id: "pooled",
      healthIntervalMs: 0,
      idleTimeoutMs: 200,
    });
    // One request at a time: a slot still held by the stalled request would queue the next forever.
    await using front = await startTestServer(engine, { admission: { maxConcurrent: 1 } });
    const failed = await front.client.responses
      .create({ model: "pooled", input: "hello" })
      .catch((caught: unknown) => caught);
    expect(failed).toMatchObject({ code: "upstream_timeout" });
    await upstream.requests[0]!.closed;
    // The health check has not run, so the only replica is tried although it was marked down.
    const next = await front.client.responses.create({ model: "pooled", input: "again" });
    expect(next.output_text).toBe("hi");
  });
});
