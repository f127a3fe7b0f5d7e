import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { startTestServer, type TestServer } from "../server/test-support/test-server.js";
import { AgentThread } from "./agent-thread.js";
import { buildSystemPrompt } from "./system-prompt.js";
import { recordResponseUsage } from "./test-support/response-usage.js";
import { Workspace } from "./workspace.js";

describe("the agent's prompt prefix on the llama engine (synthetic model)", () => {
  let engine: LlamaEngine;
  let t: TestServer;
  beforeAll(async () => {
    // A fixed draft cost: drafts sized by a measured one vary with timing, and a random model's
    // near-ties then flip, so its answers (and whether it calls a tool) would vary from run to run.
    engine = await LlamaEngine.create({
      modelPath: await testModelPath(),
      contextSize: 16384,
      draftTokenCost: 0.5,
    });
    t = await startTestServer(engine);
  });
  afterAll(async () => {
    await t.server.close();
    await engine.dispose();
  });

  // Before the tool list was stable, the turn asking for a command re-evaluated everything from the
  // tools on (1,641 of 5,913 tokens here; about a minute per 3,000 tokens on the default model).
  // The prompt and tools are ~5,000 tokens in the tiny model's small vocabulary. Retried: the random
  // model's greedy answers still vary from run to run now and then (near-ties flip with batch
  // composition), and a rare run writes past the context or calls in a way that re-renders
  // differently.
  const options = { timeout: 300_000, retry: 2 };
  test(
    "a turn asking for a command, and the turn after it, reuse the whole conversation's KV",
    options,
    async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), "spark-prefix-"));
      execFileSync("git", ["init", "-q"], { cwd: dir });
      await using client = await ResponsesClient.connect({ baseUrl: `${t.server.url}/v1` });
      const thread = new AgentThread({
        client,
        workspace: new Workspace(dir),
        instructions: buildSystemPrompt(dir, []),
        temperature: 0,
      });
      let turn = 0;
      const responses = recordResponseUsage(client, () => turn);
      const statuses: string[] = [];
      thread.on((event) => {
        if (event.type === "turn.completed")
          statuses.push(event.error ? `${event.status}: ${event.error.message}` : event.status);
      });
      await thread.prewarm();
      for (const input of ["Explain this repository.", "Run the tests please.", "Thanks, now summarize."]) {
        turn++;
        await thread.startTurn(input);
      }
      expect(statuses).toEqual(["completed", "completed", "completed"]);
      // Each turn's first response against the previous turn's last: everything that one read and
      // wrote is still evaluated, at most its last token not. (Within a turn, a random model's call
      // can re-render as other tokens than it was written in; that reuse is not what this checks.)
      for (const next of [2, 3]) {
        const previous = responses.filter((response) => response.turn === next - 1).at(-1)!;
        const first = responses.find((response) => response.turn === next)!;
        expect(first.cached, `turn ${next}`).toBeGreaterThanOrEqual(previous.input + previous.output - 1);
      }
      expect(new Set(responses.map((response) => response.turn))).toEqual(new Set([0, 1, 2, 3]));
    },
  );
});
