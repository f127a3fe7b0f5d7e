import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import type { TurnStats } from "../protocol/agent.js";
import { startTestServer, type TestServer } from "../server/test-support/test-server.js";
import { AgentThread } from "./agent-thread.js";
import { buildSystemPrompt } from "./system-prompt.js";
import { Workspace } from "./workspace.js";

describe("the agent's prompt prefix on the llama engine (synthetic model)", () => {
  let engine: LlamaEngine;
  let t: TestServer;
  beforeAll(async () => {
    engine = await LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 16384 });
    t = await startTestServer(engine);
  });
  afterAll(async () => {
    await t.server.close();
    await engine.dispose();
  });

  // Before the tool list was stable, the turn asking for a command re-evaluated everything from the
  // tools on (1,641 of 5,913 tokens here; about a minute per 3,000 tokens on the default model).
  test("a turn asking for a command, and the turn after it, reuse the whole conversation's KV", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-prefix-"));
    execFileSync("git", ["init", "-q"], { cwd: dir });
    await using client = await ResponsesClient.connect({ baseUrl: `${t.server.url}/v1` });
    const thread = new AgentThread({
      client,
      workspace: new Workspace(dir),
      instructions: buildSystemPrompt(dir, []),
      temperature: 0,
    });
    const turns: { status: string; stats: TurnStats }[] = [];
    thread.on((event) => {
      if (event.type === "turn.completed") turns.push(event);
    });
    await thread.prewarm();
    await thread.startTurn("Explain this repository.");
    await thread.startTurn("Run the tests please.");
    await thread.startTurn("Thanks, now summarize.");
    expect(turns.map((turn) => turn.status)).toEqual(["completed", "completed", "completed"]);
    for (const [i, { stats: turn }] of turns.entries()) {
      if (i === 0) continue;
      const previous = turns[i - 1]!.stats;
      // Everything the previous turn read and wrote is still evaluated; at most its last token is not.
      expect(turn.cachedInputTokens).toBeGreaterThanOrEqual(previous.inputTokens + previous.outputTokens - 1);
    }
  }, 300_000); // The prompt and tools are ~5,000 tokens in the tiny model's small vocabulary.
});
