import { afterAll, describe, expect, test } from "vitest";
import { SparkError } from "../../protocol/errors.js";
import { ModelRegistry } from "../../server/model-registry.js";
import { startTestServer, type TestServer } from "../../server/test-support/test-server.js";
import type { EngineEvent } from "../engine.js";
import { ScriptedEngine, type ScriptedReply } from "../scripted/scripted-engine.js";
import { expectWellFormedCalls } from "../test-support/call-stream.js";
import { collect, describeEngineConformance } from "../test-support/engine-conformance.js";
import { ProbeEngine } from "./test-support/probe-engine.js";
import { UpstreamEngine } from "./upstream-engine.js";

const story = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");
const servers: TestServer[] = [];

/** A real Spark server on loopback running `engine`: the upstream. */
async function upstream(engine: ProbeEngine | ScriptedEngine, apiKeys?: string[]): Promise<string> {
  const server = await startTestServer(engine, apiKeys ? { apiKeys } : {});
  servers.push(server);
  return `${server.url}/v1`;
}

afterAll(async () => {
  for (const test of servers) await test.server.close();
});

describeEngineConformance("upstream", async () =>
  UpstreamEngine.create({
    replicas: [await upstream(new ScriptedEngine({ script: () => ({ text: story }) }))],
    model: "scripted",
    healthIntervalMs: 0,
  }),
);

describe("upstream engine", () => {
  test("maps the conversation, tools and settings onto Chat Completions as the upstream sees them", async () => {
    const probe = new ProbeEngine(new ScriptedEngine({ script: [{ text: "ok" }] }));
    await using engine = new UpstreamEngine({
      replicas: [await upstream(probe)],
      model: "scripted",
      id: "front",
    });
    expect(engine.info).toMatchObject({ id: "front", engine: "upstream" });
    await collect(engine, {
      messages: [
        { role: "system", content: "Be terse." },
        { role: "user", content: "Read a.ts" },
        {
          role: "assistant",
          content: "",
          toolCalls: [{ callId: "call_1", name: "read_file", arguments: '{"path":"a.ts"}' }],
        },
        { role: "tool", callId: "call_1", name: "read_file", content: "export {}" },
      ],
      tools: [{ name: "read_file", description: "Reads a file.", parameters: { type: "object" } }],
      maxOutputTokens: 5,
      temperature: 0.5,
      topP: 0.9,
      seed: 7,
      stop: ["END"],
      prediction: "ok",
      conversation: "conv-1",
    });
    const seen = probe.requests[0]!;
    expect(seen.messages).toEqual([
      { role: "system", content: "Be terse." },
      { role: "user", content: "Read a.ts" },
      {
        role: "assistant",
        content: "",
        toolCalls: [{ callId: "call_1", name: "read_file", arguments: '{"path":"a.ts"}' }],
      },
      { role: "tool", callId: "call_1", name: "read_file", content: "export {}" },
    ]);
    expect(seen.tools).toEqual([
      { name: "read_file", description: "Reads a file.", parameters: { type: "object" } },
    ]);
    expect(seen).toMatchObject({
      maxOutputTokens: 5,
      temperature: 0.5,
      topP: 0.9,
      seed: 7,
      stop: ["END"],
      prediction: "ok",
      conversation: "conv-1",
    });
  });

  test("tool calls stream back as they arrive (start, argument deltas, whole call) and end with stopReason tool_calls", async () => {
    const reply: ScriptedReply = {
      text: "Reading.",
      toolCalls: [
        { name: "read_file", arguments: '{"path": "a.ts", "limit": 10}' },
        { name: "list_dir", arguments: '{"path":"."}' },
      ],
    };
    await using engine = new UpstreamEngine({
      replicas: [await upstream(new ScriptedEngine({ script: [reply] }))],
      model: "scripted",
    });
    const { text, events, result } = await collect(engine, { messages: [{ role: "user", content: "go" }] });
    expect(text).toBe("Reading.");
    const calls = expectWellFormedCalls(events);
    expect(calls.map(({ call }) => [call.name, call.arguments])).toEqual([
      ["read_file", '{"path": "a.ts", "limit": 10}'],
      ["list_dir", '{"path":"."}'],
    ]);
    for (const { call } of calls) expect(call.callId).toMatch(/^call_/);
    // The first call's argument tokens came one by one as they were generated, not at the end.
    expect(calls[0]?.deltas).toEqual(['{"path":', ' "a.ts",', ' "limit":', " 10}"]);
    expect(events.findIndex((e) => e.type === "tool_call_start")).toBeLessThan(
      events.findIndex((e) => e.type === "tool_call"),
    );
    expect(result.stopReason).toBe("tool_calls");
    expect(result.usage.outputTokens).toBeGreaterThan(2);
  });

  test("reasoning_content comes through as reasoning, apart from the answer", async () => {
    await using engine = new UpstreamEngine({
      replicas: [
        await upstream(
          new ScriptedEngine({ script: () => ({ reasoning: "Hmm, a greeting.", text: "Hi." }) }),
        ),
      ],
      model: "scripted",
    });
    const { text, events } = await collect(engine, { messages: [{ role: "user", content: "hello" }] });
    expect(text).toBe("Hi.");
    expect(events.flatMap((e) => (e.type === "reasoning" ? [e.text] : [])).join("")).toBe("Hmm, a greeting.");
  });

  test("a forced tool_choice reaches the upstream; auto is not sent", async () => {
    const probe = new ProbeEngine(new ScriptedEngine({ script: () => ({ text: "ok" }) }));
    await using engine = new UpstreamEngine({ replicas: [await upstream(probe)], model: "scripted" });
    const tools = [{ name: "read_file", parameters: { type: "object" } }];
    const messages = [{ role: "user" as const, content: "go" }];
    await collect(engine, { messages, tools, toolChoice: "required" });
    await collect(engine, { messages, tools, toolChoice: { name: "read_file" } });
    await collect(engine, { messages, tools, toolChoice: "auto" });
    expect(probe.requests.map((r) => r.toolChoice)).toEqual(["required", { name: "read_file" }, undefined]);
  });

  test("cancelling aborts the upstream request: the upstream stops decoding at its next token", async () => {
    const probe = new ProbeEngine(
      new ScriptedEngine({ script: () => ({ text: story }), tokensPerSecond: 50 }),
    );
    await using engine = new UpstreamEngine({ replicas: [await upstream(probe)], model: "scripted" });
    const controller = new AbortController();
    const events: EngineEvent[] = [];
    for await (const event of engine.generate(
      { messages: [{ role: "user", content: "go" }], maxOutputTokens: 300 },
      { signal: controller.signal },
    )) {
      events.push(event);
      if (event.type === "text") controller.abort();
    }
    expect(events.at(-1)).toMatchObject({ type: "done", result: { stopReason: "cancelled" } });
    const upstreamRun = await probe.ended(0);
    expect(upstreamRun.result?.stopReason).toBe("cancelled");
    expect(upstreamRun.result?.usage.outputTokens).toBeLessThan(10);
  });

  test("breaking out of the stream also stops the upstream", async () => {
    const probe = new ProbeEngine(
      new ScriptedEngine({ script: () => ({ text: story }), tokensPerSecond: 50 }),
    );
    await using engine = new UpstreamEngine({ replicas: [await upstream(probe)], model: "scripted" });
    for await (const event of engine.generate({ messages: [{ role: "user", content: "go" }] })) {
      if (event.type === "text") break;
    }
    const upstreamRun = await probe.ended(0);
    expect(upstreamRun.result?.stopReason).toBe("cancelled");
    expect(upstreamRun.result?.usage.outputTokens).toBeLessThan(10);
  });

  test("prefillOnly sends the prompt for one token, discards it and reports no output", async () => {
    const probe = new ProbeEngine(new ScriptedEngine());
    await using engine = new UpstreamEngine({ replicas: [await upstream(probe)], model: "scripted" });
    const { events, result } = await collect(engine, {
      messages: [{ role: "user", content: "warm" }],
      prefillOnly: true,
    });
    expect(events.map((e) => e.type)).toEqual(["done"]);
    expect(result).toMatchObject({ stopReason: "stop", usage: { outputTokens: 0 } });
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(probe.requests[0]?.maxOutputTokens).toBe(1);
  });

  test("sends its API key; a wrong one is a server-side upstream_error, not the client's 401", async () => {
    const url = await upstream(new ScriptedEngine(), ["upstream-secret"]);
    await using good = new UpstreamEngine({ replicas: [url], model: "scripted", apiKey: "upstream-secret" });
    expect((await collect(good, { messages: [{ role: "user", content: "hi" }] })).text).toBe("You said: hi");
    await using bad = new UpstreamEngine({ replicas: [url], model: "scripted", apiKey: "wrong" });
    const error = await collect(bad, { messages: [{ role: "user", content: "hi" }] }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SparkError);
    expect(error).toMatchObject({ code: "upstream_error", status: 502 });
    expect((error as Error).message).toMatch(/refused Spark's API key \(401\)/);
  });

  test("a model the upstream does not serve is a clear upstream_error", async () => {
    // An upstream with one model answers any name with it (as llama-server does); with two, an
    // unknown name is its 404.
    const models = new ModelRegistry();
    models.add("first", new ScriptedEngine({ id: "first" }));
    models.add("second", new ScriptedEngine({ id: "second" }));
    const server = await startTestServer(new ScriptedEngine(), { models });
    servers.push(server);
    await using engine = new UpstreamEngine({ replicas: [`${server.url}/v1`], model: "nope" });
    const error = await collect(engine, { messages: [{ role: "user", content: "hi" }] }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "upstream_error", status: 502 });
    expect((error as Error).message).toMatch(/does not serve this model \(404\).*nope/);
  });

  test("an unreachable upstream is upstream_unavailable (503) naming it", async () => {
    const url = await upstream(new ScriptedEngine());
    await servers.pop()!.server.close();
    await using engine = new UpstreamEngine({ replicas: [url], model: "scripted" });
    const error = await collect(engine, { messages: [{ role: "user", content: "hi" }] }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "upstream_unavailable", status: 503 });
    expect((error as Error).message).toContain(url);
    expect(engine.pool.replicas[0]?.healthy).toBe(false);
  });

  test("create learns the replicas' health before the first request", async () => {
    const live = await upstream(new ScriptedEngine());
    await using engine = await UpstreamEngine.create({
      replicas: ["http://127.0.0.1:9/v1", live],
      model: "scripted",
      healthIntervalMs: 0,
    });
    expect(engine.pool.replicas.map((r) => r.healthy)).toEqual([false, true]);
    expect(engine.info.contextSize).toBe(32768);
  });
});
