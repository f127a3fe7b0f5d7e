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

describe("a rewound conversation on the llama engine (synthetic model)", () => {
  let engine: LlamaEngine;
  let t: TestServer;
  beforeAll(async () => {
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

  // Retried: a random model's greedy answer now and then calls a tool in a way that re-renders as
  // other tokens than it was written in (see stable-prefix-llama.test.ts).
  test("the next request after a rewind finds the kept prefix in the KV state: only the new message is evaluated", {
    timeout: 300_000,
    retry: 2,
  }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-rewind-llama-"));
    execFileSync("git", ["init", "-q"], { cwd: dir });
    await using client = await ResponsesClient.connect({ baseUrl: `${t.server.url}/v1` });
    // Short answers: the random model may otherwise write until the context is full.
    const create = client.create.bind(client);
    client.create = (body, options) => create({ ...body, max_output_tokens: 24 }, options);
    let turn = 0;
    const responses = recordResponseUsage(client, () => turn);
    const thread = new AgentThread({
      client,
      workspace: new Workspace(dir),
      instructions: buildSystemPrompt(dir, []),
      temperature: 0,
    });
    for (const input of ["Say hello.", "Now write a long story about the sea and its many ships."]) {
      turn++;
      await thread.startTurn(input);
    }
    const second = thread.history.find(
      (item) => item.type === "user_message" && item.id !== thread.history[0]!.id,
    )!;
    await thread.rewind(second.id, "conversation");
    expect(
      thread.history.filter((item) => item.type === "user_message").map((item) => item.type),
    ).toHaveLength(1);
    turn++;
    await thread.startTurn("Thanks.");

    const kept = responses.filter((response) => response.turn === 1).at(-1)!;
    const rewound = responses.filter((response) => response.turn === 2);
    const next = responses.find((response) => response.turn === 3)!;
    // What the rewound turn added was in the KV state too: the next request did not use it...
    const rewoundEnd = rewound.at(-1)!.input + rewound.at(-1)!.output;
    expect(next.input).toBeLessThan(rewoundEnd);
    // ...but found everything the kept turn read and wrote (at most its last token not), so only
    // the new message (with its chat-template wrapping) was evaluated.
    expect(next.cached).toBeGreaterThanOrEqual(kept.input + kept.output - 1);
    expect(next.input - next.cached).toBeLessThan(40);
  });
});
