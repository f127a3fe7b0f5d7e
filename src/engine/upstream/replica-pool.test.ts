import { afterAll, describe, expect, test } from "vitest";
import { ModelRegistry } from "../../server/model-registry.js";
import { SparkServer } from "../../server/spark-server.js";
import type { EngineEvent } from "../engine.js";
import { ScriptedEngine } from "../scripted/scripted-engine.js";
import { collect } from "../test-support/engine-conformance.js";
import { ReplicaPool } from "./replica-pool.js";
import { ProbeEngine } from "./test-support/probe-engine.js";
import { UpstreamEngine } from "./upstream-engine.js";

const servers: SparkServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.close();
});

/** A Spark server on loopback (on `port` when given) running a probed scripted engine. */
async function replica(options: { port?: number; tokensPerSecond?: number } = {}) {
  const probe = new ProbeEngine(
    new ScriptedEngine({
      tokensPerSecond: options.tokensPerSecond ?? 0,
      script: (request) => ({ text: `${request.messages.at(-1)?.content} and more words to stream out` }),
    }),
  );
  const models = new ModelRegistry();
  models.add("scripted", probe);
  const server = await SparkServer.start({ models, port: options.port ?? 0 });
  servers.push(server);
  return { probe, server, url: `${server.url}/v1` };
}

const ask = (content: string) => ({ messages: [{ role: "user" as const, content }] });

describe("replica pool", () => {
  test("a conversation keeps going to the replica that served it", async () => {
    const a = await replica();
    const b = await replica();
    await using engine = new UpstreamEngine({
      replicas: [a.url, b.url],
      model: "scripted",
      healthIntervalMs: 0,
    });
    for (let turn = 0; turn < 4; turn++)
      await collect(engine, { ...ask(`turn ${turn}`), conversation: "c1" });
    const counts = [a.probe.requests.length, b.probe.requests.length].sort();
    expect(counts).toEqual([0, 4]);
    expect(engine.pool.replicaOf("c1")?.url).toBe(a.probe.requests.length === 4 ? a.url : b.url);
  });

  test("new conversations go to the least-loaded replica", async () => {
    const a = await replica({ tokensPerSecond: 50 });
    const b = await replica({ tokensPerSecond: 50 });
    await using engine = new UpstreamEngine({
      replicas: [a.url, b.url],
      model: "scripted",
      healthIntervalMs: 0,
    });
    const first = engine.generate({ ...ask("one"), conversation: "x" });
    await first.next(); // streaming: one request in flight
    const second = engine.generate({ ...ask("two"), conversation: "y" });
    await second.next();
    expect(engine.pool.replicas.map((r) => r.inFlight)).toEqual([1, 1]);
    await first.return(undefined);
    await second.return(undefined);
    expect(engine.pool.replicas.map((r) => r.inFlight)).toEqual([0, 0]);
  });

  test("a replica that fails before any output is skipped transparently and marked unhealthy", async () => {
    const live = await replica();
    const dead = await replica();
    await dead.server.close();
    await using engine = new UpstreamEngine({
      replicas: [dead.url, live.url],
      model: "scripted",
      healthIntervalMs: 0,
    });
    for (let i = 0; i < 3; i++) {
      const { text } = await collect(engine, { ...ask(`q${i}`), conversation: `conv${i}` });
      expect(text).toBe(`q${i} and more words to stream out`);
    }
    expect(live.probe.requests).toHaveLength(3);
    expect(engine.pool.replicas[0]).toMatchObject({ healthy: false });
    expect(engine.pool.replicas[0]?.lastError).toMatch(/Could not reach/);
  });

  test("a conversation whose replica went down moves to a healthy one and stays there", async () => {
    const a = await replica();
    const b = await replica();
    await using engine = new UpstreamEngine({
      replicas: [a.url, b.url],
      model: "scripted",
      healthIntervalMs: 0,
    });
    await collect(engine, { ...ask("first"), conversation: "c" });
    const home = engine.pool.replicaOf("c")!;
    const [down, other] = home.url === a.url ? [a, b] : [b, a];
    await down.server.close();
    await collect(engine, { ...ask("second"), conversation: "c" });
    await collect(engine, { ...ask("third"), conversation: "c" });
    expect(engine.pool.replicaOf("c")?.url).toBe(other.url);
    expect(other.probe.requests.map((r) => r.messages.at(-1)?.content)).toEqual(["second", "third"]);
  });

  test("health checks mark a dead replica unhealthy and bring it back once it answers again", async () => {
    const a = await replica();
    const pool = new ReplicaPool({ replicas: [a.url], healthIntervalMs: 0, healthTimeoutMs: 1000 });
    await pool.checkAll();
    expect(pool.replicas[0]?.healthy).toBe(true);
    const port = a.server.port;
    await a.server.close();
    await pool.checkAll();
    expect(pool.replicas[0]).toMatchObject({ healthy: false });
    expect(pool.replicas[0]?.lastError).toMatch(/health check failed/);
    await replica({ port });
    await pool.checkAll();
    expect(pool.replicas[0]).toMatchObject({ healthy: true, lastError: null });
    pool.dispose();
  });

  test("when every replica is down, the request fails with upstream_unavailable after trying each once", async () => {
    const a = await replica();
    const b = await replica();
    await a.server.close();
    await b.server.close();
    await using engine = new UpstreamEngine({
      replicas: [a.url, b.url],
      model: "scripted",
      healthIntervalMs: 0,
    });
    const events: EngineEvent[] = [];
    const error = await (async () => {
      for await (const event of engine.generate(ask("hello"))) events.push(event);
    })().catch((e: unknown) => e);
    expect(events).toEqual([]);
    expect(error).toMatchObject({ code: "upstream_unavailable" });
    expect(engine.pool.replicas.every((r) => !r.healthy)).toBe(true);
  });
});
