import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import type { Engine } from "../engine/engine.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { connectHost, type HostTestClient } from "../host/test-support/host-client.js";
import { type ServeStack, startServe } from "./serve-stack.js";

const closing: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close();
});

// The web app said "starting" for 30 s while `spark serve` evaluated the agent prompt for the first
// thread, and only once one was asked for.
test("spark serve evaluates the agent prompt once its model has loaded, before any thread, and tells the web app how far", {
  timeout: 300_000,
}, async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-serve-prompt-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  let loaded!: (engine: Engine) => void;
  const loading = new Promise<Engine>((resolve) => {
    loaded = resolve;
  });
  const stack: ServeStack = await startServe({
    engine: loading,
    modelId: "tiny",
    cwd: repo,
    sessionsDir: path.join(repo, ".sessions"),
    webDir: null,
    apiKeys: [],
  });
  closing.push(() => stack.close());
  const client: HostTestClient = await connectHost(`${stack.server.url.replace("http", "ws")}/v1/agent`);
  closing.push(() => client.ws.close());
  // Connected while the model still loads: the evaluation waits for it, then runs unasked.
  loaded(await LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 16384 }));
  await client.next((event) => event.type === "prompt.progress" && event.done === true, 0);

  const steps = client.events.filter((event) => event.type === "prompt.progress");
  const evaluated = steps.map((event) => event.evaluated_tokens as number);
  expect(evaluated).toEqual([...evaluated].sort((a, b) => a - b));
  const running = steps.filter((event) => event.done === false && (event.total_tokens as number) > 0);
  expect(running.length).toBeGreaterThan(1);
  const last = steps.at(-1)!;
  expect(last.evaluated_tokens).toBe(last.total_tokens);
  expect(last.total_tokens as number).toBeGreaterThan(1000);
  expect(client.events.some((event) => event.type === "thread.started")).toBe(false);
});
