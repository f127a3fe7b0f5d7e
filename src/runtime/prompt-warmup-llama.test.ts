import { execFileSync } from "node:child_process";
import { mkdtemp, readdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Engine, GenerateOptions, GenerateRequest } from "../engine/engine.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { AgentRuntime } from "./agent-runtime.js";
import type { PromptProgress } from "./prompt-warmup.js";

/** One request the engine ran: what it evaluated and reused, and its prefill progress. */
interface Evaluation {
  prefillOnly: boolean;
  input: number;
  cached: number;
  progress: [number, number][];
  ended: boolean;
}

/** Records every request `engine` runs (in the order they start) beside running it. */
function countEvaluations(engine: Engine): Evaluation[] {
  const seen: Evaluation[] = [];
  const generate = engine.generate.bind(engine);
  engine.generate = async function* (request: GenerateRequest, options: GenerateOptions = {}) {
    const call: Evaluation = {
      prefillOnly: request.prefillOnly === true,
      input: 0,
      cached: 0,
      progress: [],
      ended: false,
    };
    seen.push(call);
    const onPrefillProgress = (evaluated: number, total: number) => {
      call.progress.push([evaluated, total]);
      options.onPrefillProgress?.(evaluated, total);
    };
    for await (const event of generate(request, { ...options, onPrefillProgress })) {
      if (event.type === "done") {
        call.input = event.result.usage.inputTokens;
        call.cached = event.result.usage.cachedInputTokens;
        call.ended = true;
      }
      yield event;
    }
  };
  return seen;
}

async function workspace(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-warmup-"));
  execFileSync("git", ["init", "-q"], { cwd: dir });
  return dir;
}

describe("the agent prompt evaluated at model load (llama engine, synthetic model)", () => {
  let modelPath: string;
  let kvDir: string;
  beforeAll(async () => {
    modelPath = await testModelPath();
    kvDir = await mkdtemp(path.join(os.tmpdir(), "spark-warmup-kv-"));
  });
  const engines: Engine[] = [];
  afterAll(async () => {
    for (const engine of engines) await engine.dispose();
  });
  const start = async (cwd: string) => {
    const engine = await LlamaEngine.create({ modelPath, contextSize: 16384, kvStateCache: { dir: kvDir } });
    engines.push(engine);
    const evaluations = countEvaluations(engine);
    const runtime = await AgentRuntime.start({
      cwd,
      loadTier: async () => engine,
      sessionsDir: path.join(cwd, ".sessions"),
      maxOutputTokens: 2,
    });
    return { runtime, evaluations };
  };

  test("starts before any thread, a thread opened meanwhile waits for it, and the first turn evaluates only its own message", {
    timeout: 300_000,
  }, async () => {
    const cwd = await workspace();
    const { runtime, evaluations } = await start(cwd);
    await using _ = runtime;
    const warmup = runtime.promptWarmup!;
    const heard: PromptProgress[] = [];
    warmup.on((progress) => heard.push(progress));
    // Opened at once, while the prompt is still being evaluated.
    const { thread } = await runtime.newThread();
    expect(warmup.progress.done).toBe(true);

    const [warm, threadWarm, ...rest] = evaluations;
    expect(rest).toEqual([]);
    expect(warm!.prefillOnly).toBe(true);
    expect(warm!.input - warm!.cached).toBeGreaterThan(500);
    // The thread's own pre-warm started after the runtime's had ended, and evaluated nothing.
    expect(threadWarm!.prefillOnly).toBe(true);
    expect(threadWarm!.cached).toBe(threadWarm!.input);
    expect(threadWarm!.input).toBe(warm!.input);

    // The server's progress events and the runtime's: never back, ending at 100%.
    const total = warm!.input - warm!.cached;
    expect(warm!.progress.at(-1)).toEqual([total, total]);
    const evaluated = heard.map((progress) => progress.evaluated);
    expect(evaluated).toEqual([...evaluated].sort((a, b) => a - b));
    expect(heard.at(-1)).toEqual({ evaluated: total, total, done: true });
    expect(heard.filter((progress) => !progress.done).length).toBeGreaterThan(1);

    await thread.startTurn("Hi.");
    const turn = evaluations[2]!;
    expect(turn.prefillOnly).toBe(false);
    expect(turn.cached).toBeGreaterThanOrEqual(warm!.input - 1);
    // Saved for the next start on this machine.
    expect((await readdir(kvDir)).some((name) => name.endsWith(".kv"))).toBe(true);
  });

  test("a later start (a fresh engine) restores the saved prompt instead of evaluating it", {
    timeout: 300_000,
  }, async () => {
    const cwd = await workspace();
    const first = await start(cwd);
    await first.runtime.promptWarmup!.done;
    await first.runtime.dispose();
    const again = await start(cwd);
    await using _ = again.runtime;
    await again.runtime.promptWarmup!.done;
    const [warm] = again.evaluations;
    expect(warm!.prefillOnly).toBe(true);
    expect(warm!.cached).toBe(warm!.input);
    expect(again.runtime.promptWarmup!.progress).toEqual({ evaluated: 0, total: 0, done: true });
  });

  test("a start in another workspace restores the prompt saved in the first (the prompt named its workspace before the tool list, so every workspace evaluated it anew)", {
    timeout: 300_000,
  }, async () => {
    const first = await start(await workspace());
    await first.runtime.promptWarmup!.done;
    await first.runtime.dispose();
    const elsewhere = await start(await workspace());
    await using _ = elsewhere.runtime;
    await elsewhere.runtime.promptWarmup!.done;
    const [warm] = elsewhere.evaluations;
    expect(warm!.prefillOnly).toBe(true);
    expect(warm!.input).toBeGreaterThan(500);
    expect(warm!.cached).toBe(warm!.input);
  });
});
