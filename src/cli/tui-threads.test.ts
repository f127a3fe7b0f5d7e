import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { HostClient } from "../client-core/host-client.js";
import type { ResolvedConfig } from "../config/spark-config.js";
import type { GenerateRequest } from "../engine/engine.js";
import { LocalAgentHost } from "../runtime/local-agent-host.js";
import { scriptedTiers } from "../runtime/test-support/scripted-tiers.js";
import { TuiThreads } from "./tui-threads.js";

const lastUser = (request: GenerateRequest) =>
  [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";

let local: LocalAgentHost;
let client: HostClient;

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-tui-threads-"));
  execFileSync("git", ["init", "-q"], { cwd: dir });
  // Two tiers, each answering with its own name: which one ran a turn shows in its answer.
  const config: ResolvedConfig = {
    defaultTier: "fast",
    delegateTier: null,
    tiers: { fast: { engine: "llama" }, deep: { engine: "llama" } },
    sources: [],
  };
  local = await LocalAgentHost.start({
    cwd: dir,
    config,
    loadTier: scriptedTiers({
      fast: { script: (request) => ({ text: `fast: ${lastUser(request)}` }), tokensPerSecond: 1000 },
      deep: { script: (request) => ({ text: `deep: ${lastUser(request)}` }), tokensPerSecond: 1000 },
    }),
    prewarm: false,
    sessionsDir: path.join(dir, ".sessions"),
  });
  client = await local.connect();
});

afterAll(async () => {
  client.dispose();
  await local.dispose();
});

/** The text of the thread's last agent message. */
function lastAnswer(thread: { history: readonly { type: string; text?: string }[] }): string | undefined {
  return thread.history.findLast((item) => item.type === "agent_message")?.text;
}

test("/model moves the current thread to another tier through the host, and /new keeps that tier", async () => {
  const threads = new TuiThreads(client);
  const thread = await threads.open();
  expect(thread.model).toBe("fast");
  await thread.startTurn("one");
  expect(lastAnswer(thread)).toBe("fast: one");

  const same = await threads.changeModel("deep");
  expect(same).toBe(thread);
  // The host announced the new model (thread.renamed), and the next turn runs there.
  expect(thread.model).toBe("deep");
  await thread.startTurn("two");
  expect(lastAnswer(thread)).toBe("deep: two");

  const next = await threads.open();
  expect(next.info.id).not.toBe(thread.info.id);
  expect(next.model).toBe("deep");
  await next.startTurn("three");
  expect(lastAnswer(next)).toBe("deep: three");
  threads.close();
});

test("a model the host does not serve is refused with the ones it does, and nothing changes", async () => {
  const threads = new TuiThreads(client);
  const thread = await threads.open();
  await expect(threads.changeModel("huge")).rejects.toThrow("Unknown model 'huge'. Available: fast, deep.");
  expect(thread.model).toBe("fast");
  await thread.startTurn("still here");
  expect(lastAnswer(thread)).toBe("fast: still here");
  threads.close();
});

test("a running turn is stopped before the switch", async () => {
  const threads = new TuiThreads(client);
  const thread = await threads.open();
  const words = Array.from({ length: 5000 }, (_, i) => `w${i}`).join(" ");
  const statuses: string[] = [];
  const streaming = new Promise<void>((resolve) => {
    thread.on((event) => {
      if (event.type === "item.delta") resolve();
      if (event.type === "turn.completed") statuses.push(event.status);
    });
  });
  const turn = thread.startTurn(words);
  await streaming;
  await threads.changeModel("deep");
  await turn;
  expect(statuses).toEqual(["interrupted"]);
  expect(thread.model).toBe("deep");
  threads.close();
});
