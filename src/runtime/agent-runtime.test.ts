import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, test } from "vitest";
import { runPlain } from "../cli/tui/plain-output.js";
import type { ResolvedConfig } from "../config/spark-config.js";
import type { GenerateRequest } from "../engine/engine.js";
import { ScriptedEngine, type ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import type { ThreadEvent } from "../protocol/agent.js";
import { startTestServer, type TestServer } from "../server/test-support/test-server.js";
import { AgentRuntime } from "./agent-runtime.js";
import { scriptedTiers } from "./test-support/scripted-tiers.js";
import { chooseTiers } from "./tier-engines.js";

const lastUser = (request: GenerateRequest) =>
  [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";

/** The fast tier: delegates the first task, then acknowledges whatever comes back. */
function fastScript(request: GenerateRequest): ScriptedReply {
  const last = request.messages.at(-1);
  const user = lastUser(request);
  if (last?.role === "tool") return { text: "Delegated; I will report back." };
  if (user.startsWith("Result of sub-agent") || user.startsWith("Sub-agent")) return { text: "Noted." };
  return { toolCalls: [{ name: "delegate", arguments: JSON.stringify({ task: `deep work: ${user}` }) }] };
}

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function setup(deepText: string, tokensPerSecond = 0) {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-tiers-"));
  await writeFile(path.join(dir, "main.ts"), "export {};\n");
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const deepSeen: string[] = [];
  const deep = new ScriptedEngine({
    tokensPerSecond,
    script: (request) => {
      deepSeen.push(lastUser(request));
      return { text: deepText };
    },
  });
  // The deep tier is another Spark server reached as an upstream over loopback.
  const upstream: TestServer = await startTestServer(deep);
  cleanup.push(() => upstream.server.close());
  const config: ResolvedConfig = {
    defaultTier: "fast",
    delegateTier: "deep",
    tiers: {
      fast: { engine: "llama" },
      deep: { engine: "upstream", url: `${upstream.url}/v1`, model: "scripted" },
    },
    sources: [],
  };
  const runtime = await AgentRuntime.start({
    cwd: dir,
    config,
    loadTier: scriptedTiers({ fast: { script: fastScript } }),
    prewarm: false,
    sessionsDir: path.join(dir, ".sessions"),
  });
  cleanup.push(() => runtime.dispose());
  const { thread } = await runtime.newThread();
  const events: ThreadEvent[] = [];
  thread.on((event) => events.push(event));
  const until = async <T extends ThreadEvent["type"]>(type: T, count = 1) => {
    for (let i = 0; i < 500; i++) {
      const found = events.filter((e) => e.type === type);
      if (found.length >= count) return found.at(-1) as Extract<ThreadEvent, { type: T }>;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`no ${type} #${count}; got ${events.map((e) => e.type).join(", ")}`);
  };
  return { runtime, thread, events, until, deepSeen, upstream };
}

describe("tiers and sub-agents", () => {
  test("a fast turn delegates to the deep tier; the result comes back as a new turn", async () => {
    const t = await setup("The parser now keeps the last line.");
    expect(t.runtime.modelId).toBe("fast");
    expect(t.runtime.models).toEqual(["fast", "deep"]);
    await t.thread.startTurn("fix the parser");
    const started = await t.until("subagent.started");
    expect(started.subagent).toMatchObject({ task: "deep work: fix the parser", model: "deep" });
    const done = await t.until("subagent.completed");
    expect(done).toMatchObject({ status: "completed", result: "The parser now keeps the last line." });
    // The deep engine, behind the upstream, saw the task.
    expect(t.deepSeen).toEqual(["deep work: fix the parser"]);
    await t.until("turn.completed", 2);
    await t.thread.whenIdle();
    const id = started.subagent.id;
    const users = t.thread.history.filter((item) => item.type === "user_message").map((i) => i.text);
    expect(users).toEqual([
      "fix the parser",
      `Result of sub-agent ${id} (deep work: fix the parser): The parser now keeps the last line.`,
    ]);
    expect(t.thread.history.at(-1)).toMatchObject({ type: "agent_message", text: "Noted." });
    expect(t.thread.subAgents).toEqual([expect.objectContaining({ id, status: "completed" })]);
  });

  test("cancelling a sub-agent stops its upstream stream", async () => {
    const t = await setup(Array.from({ length: 400 }, (_, i) => `word${i}`).join(" "), 50);
    await t.thread.startTurn("refactor everything");
    const started = await t.until("subagent.started");
    // The parent's turn ends while the sub-agent works: the loop stays responsive.
    await t.until("turn.completed");
    await t.until("subagent.progress");
    expect(t.thread.busy).toBe(false);
    expect(t.thread.subAgents).toEqual([expect.objectContaining({ status: "running", progress: "writing" })]);
    expect(t.thread.cancelSubAgent(started.subagent.id)).toBe(true);
    const done = await t.until("subagent.completed");
    expect(done).toMatchObject({ status: "cancelled", error: "it was cancelled" });
    // The upstream Spark server saw the generation end cancelled.
    let metrics = "";
    for (let i = 0; i < 200 && !/outcome="cancelled"} 1/.test(metrics); i++) {
      metrics = await (await fetch(`${t.upstream.url}/metrics`)).text();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(metrics).toMatch(/spark_requests_total\{[^}]*outcome="cancelled"} 1/);
    await t.until("turn.completed", 2);
    const users = t.thread.history.filter((item) => item.type === "user_message").map((i) => i.text);
    expect(users.at(-1)).toBe(
      `Sub-agent ${started.subagent.id} (deep work: refactor everything) was cancelled: it was cancelled.`,
    );
  });

  test("spark exec waits for the sub-agent and the turn its result starts", async () => {
    const t = await setup("Deep says hi.");
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    let out = "";
    stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    stderr.resume();
    const status = await runPlain(t.thread, { input: "fix it", stdout, stderr, json: false });
    expect(status).toBe("completed");
    expect(t.thread.busy).toBe(false);
    expect(t.thread.subAgents).toEqual([expect.objectContaining({ status: "completed" })]);
    expect(out).toContain("Delegated; I will report back.");
    expect(out).toContain("Noted.");
  });

  test("switching the tier of a thread continues the conversation there", async () => {
    const t = await setup("unused");
    await t.thread.startTurn("fix the parser");
    await t.until("turn.completed", 2);
    await t.thread.whenIdle();
    t.thread.setModel("deep");
    expect(t.thread.info.model).toBe("deep");
    await t.thread.startTurn("and now the lexer");
    // The deep tier got the whole conversation resent (a chain cannot cross models).
    expect(t.deepSeen.at(-1)).toBe("and now the lexer");
    const last = t.events.filter((e) => e.type === "turn.completed").at(-1);
    expect(last).toMatchObject({ status: "completed" });
  });
});

describe("--model", () => {
  const config = {
    defaultTier: "fast",
    tiers: {
      fast: { engine: "llama" as const, model: "hf:a/b/small.gguf", context: 8192 },
      deep: { engine: "llama" as const },
    },
  };
  test("a declared tier starts the session there", () => {
    expect(chooseTiers(config, { model: "deep" })).toEqual({ defaultTier: "deep", tiers: config.tiers });
  });
  test("anything else is a model file for the default tier", () => {
    expect(chooseTiers(config, { model: "./tiny.gguf" }).tiers.fast).toEqual({
      engine: "llama",
      model: "./tiny.gguf",
      context: 8192,
    });
    expect(chooseTiers(config, {})).toEqual({ defaultTier: "fast", tiers: config.tiers });
  });
});

describe("where the embedded model computes", () => {
  test("an in-process llama model says its backend, CPU variant and threads; a scripted one has none", async () => {
    const cwd = await mkdtemp(path.join(os.tmpdir(), "spark-compute-"));
    const llama = await AgentRuntime.start({
      cwd,
      model: await testModelPath(),
      contextSize: 16384,
      prewarm: false,
    });
    cleanup.push(() => llama.dispose());
    expect(llama.compute).toMatch(/^backend cpu, CPU variant [\w-]+, \d+ threads?$/);
    const scripted = await AgentRuntime.start({ cwd, loadTier: scriptedTiers({ "*": {} }), prewarm: false });
    cleanup.push(() => scripted.dispose());
    expect(scripted.compute).toBeNull();
  }, 60_000);
});
