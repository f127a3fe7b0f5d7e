import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testEngineEnv } from "../../cli/test-support/test-engine.js";
import { startTestServer, type TestServer } from "../../server/test-support/test-server.js";
import { type SparkServeProcess, startSparkServe } from "./test-support/spark-serve-process.js";
import { UpstreamEngine } from "./upstream-engine.js";

/**
 * The failover check, end to end: a Spark front server pools two real `spark serve`
 * processes; the one streaming a response is killed (SIGKILL) mid-stream. The client gets a clear
 * error for that response, and the next turn of the same conversation succeeds on the other.
 */

const long = Array.from({ length: 120 }, (_, i) => `w${i}`).join(" ");

let replicas: SparkServeProcess[];
let engine: UpstreamEngine;
let front: TestServer;
let client: OpenAI;

beforeAll(async () => {
  replicas = await Promise.all([
    startSparkServe([], testEngineEnv({ tokensPerSecond: 50 })),
    startSparkServe([], testEngineEnv({ tokensPerSecond: 50 })),
  ]);
  engine = await UpstreamEngine.create({
    replicas: replicas.map((r) => r.url),
    model: "scripted",
    id: "pooled",
    healthIntervalMs: 0,
  });
  front = await startTestServer(engine);
  client = front.client;
}, 60_000);

afterAll(async () => {
  await front?.server.close();
  await engine?.dispose();
  for (const replica of replicas ?? []) await replica[Symbol.asyncDispose]();
});

/** One counter sample of a replica's `/metrics`, or 0 when the series does not exist yet. */
async function metric(replica: SparkServeProcess, name: string, match: string): Promise<number> {
  const text = await (await fetch(`${replica.url.replace(/\/v1$/, "")}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(match));
  return line ? Number(line.split(" ").at(-1)) : 0;
}

describe("upstream failover across spark serve processes", () => {
  test("a replica killed mid-stream fails that response clearly; the next turn succeeds on another", async () => {
    const first = await client.responses.create({ model: "pooled", input: "hello" });
    expect(first.output_text).toBe("You said: hello");
    const home = engine.pool.replicaOf(first.id)!;
    const victim = replicas.find((r) => r.url === home.url)!;
    const survivor = replicas.find((r) => r !== victim)!;

    const stream = await client.responses.create({
      model: "pooled",
      input: long,
      previous_response_id: first.id,
      stream: true,
    });
    const types: string[] = [];
    let failure: { code?: string | null; message?: string } | null | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta" && victim.child.exitCode === null) {
        victim.child.kill("SIGKILL");
        await victim.exited;
      }
      if (event.type === "response.failed") failure = event.response.error;
    }
    expect(types).toContain("response.output_text.delta");
    expect(types.at(-1)).toBe("response.failed");
    expect(failure?.code).toBe("upstream_disconnected");
    expect(failure?.message).toMatch(/closed the stream mid-response/);

    const next = await client.responses.create({
      model: "pooled",
      input: "are you there?",
      previous_response_id: first.id,
    });
    expect(next.status).toBe("completed");
    expect(next.output_text).toBe("You said: are you there?");
    expect(engine.pool.replicaOf(first.id)?.url).toBe(survivor.url);
    expect(home.healthy).toBe(false);
  }, 30_000);

  test("cancelling a pooled stream stops the upstream process's stream", async () => {
    const survivor = replicas.find((r) => r.child.exitCode === null && r.child.signalCode === null)!;
    const before = await metric(survivor, "spark_output_tokens_total", 'model="scripted"');
    const stream = await client.responses.create({ model: "pooled", input: long, stream: true });
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") break; // aborts the request
    }
    // The upstream's generation ends at its next token; wait for it to count as cancelled.
    const deadline = performance.now() + 10_000;
    while ((await metric(survivor, "spark_requests_total", 'outcome="cancelled"')) < 1) {
      if (performance.now() > deadline) {
        const text = await (await fetch(`${survivor.url.replace(/\/v1$/, "")}/metrics`)).text();
        throw new Error(`the upstream did not stop streaming\n${text}\n${survivor.stderr()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const streamed = (await metric(survivor, "spark_output_tokens_total", 'model="scripted"')) - before;
    expect(streamed).toBeGreaterThan(0);
    expect(streamed).toBeLessThan(20); // of ~123 it would have sent
  }, 30_000);
});
