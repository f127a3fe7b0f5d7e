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

describe("replica scoring (no router)", () => {
  const pool = (routing?: "prefix" | "least-loaded", loadWeight?: number) =>
    new ReplicaPool({
      replicas: ["http://a/v1", "http://b/v1", "http://c/v1"],
      healthIntervalMs: 0,
      ...(routing ? { routing } : {}),
      ...(loadWeight !== undefined ? { loadWeight } : {}),
    });
  const blocks = ["s1", "s2", "s3", "s4", "u1"];

  test("a new request goes to the replica holding most of its prefix, whatever the rotation", () => {
    const p = pool();
    const [, b, c] = p.replicas;
    p.sent(c!, ["s1"]);
    p.sent(b!, ["s1", "s2", "s3", "s4", "other"]);
    for (let i = 0; i < 6; i++) expect(p.pick(undefined, new Set(), blocks)).toBe(b);
  });

  test("load counts against the prefix: a replica much busier than an idle one loses it", () => {
    const p = pool();
    const [a, b] = p.replicas;
    p.sent(b!, ["s1", "s2"]); // 2 of 5 blocks: 0.4
    b!.inFlight = 1; // 0.4 - 1/2 < 0 for an idle replica
    expect(p.pick(undefined, new Set(), blocks)).not.toBe(b);
    b!.inFlight = 0;
    a!.inFlight = 1;
    expect(p.pick(undefined, new Set(), blocks)).toBe(b);
    const heavy = pool(undefined, 10);
    heavy.sent(heavy.replicas[0]!, blocks);
    heavy.replicas[0]!.inFlight = 1;
    heavy.replicas[1]!.inFlight = 1;
    heavy.replicas[2]!.inFlight = 2;
    expect(heavy.pick(undefined, new Set(), blocks)).toBe(heavy.replicas[0]);
  });

  test("a conversation's own replica wins over a better prefix elsewhere", () => {
    const p = pool();
    const [a, b] = p.replicas;
    p.served(a!, "conv");
    p.sent(b!, blocks);
    expect(p.pick("conv", new Set(), blocks)).toBe(a);
    expect(p.pick("other", new Set(), blocks)).toBe(b);
  });

  test("least-loaded ignores prefixes and learns none; an excluded or unhealthy replica is passed over", () => {
    const p = pool("least-loaded");
    const [a, b, c] = p.replicas;
    p.sent(b!, blocks);
    expect(b!.prefixes.size).toBe(0);
    const picked = new Set(Array.from({ length: 6 }, () => p.pick(undefined, new Set(), blocks)));
    expect(picked).toEqual(new Set([a, b, c]));

    const q = pool();
    q.sent(q.replicas[1]!, blocks);
    q.failed(q.replicas[1]!, "down");
    expect(q.pick(undefined, new Set(), blocks)).not.toBe(q.replicas[1]);
    q.sent(q.replicas[2]!, blocks);
    expect(q.pick(undefined, new Set([q.replicas[2]!]), blocks)).toBe(q.replicas[0]);
  });
});
