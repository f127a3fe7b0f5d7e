import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { startTestServer, type TestServer } from "../server/test-support/test-server.js";
import { AgentThread } from "./agent-thread.js";
import { recordResponseUsage } from "./test-support/response-usage.js";
import { Workspace } from "./workspace.js";

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

// The switch to implement is where a mode carried in the instructions or the tool list would
// re-evaluate the whole conversation; carried in the turn, the next turn reuses all of it.
test("plan turn, then implement: the implement turn reuses the whole conversation's KV (llama engine)", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-plan-prefix-"));
  execFileSync("git", ["init", "-q"], { cwd: dir });
  await using client = await ResponsesClient.connect({ baseUrl: `${t.server.url}/v1` });
  const thread = new AgentThread({
    client,
    workspace: new Workspace(dir),
    instructions: "You are Spark.",
    temperature: 0,
    maxToolRounds: 1,
  });
  let turn = -1;
  thread.on((event) => {
    if (event.type === "turn.started") turn++;
  });
  const responses = recordResponseUsage(client, () => turn);
  await thread.prewarm();
  await thread.startTurn("Plan a fix for the parser.", { mode: "plan" });
  await thread.startTurn("Implement the plan above.", { mode: "default" });
  // The first response of each turn (the plan turn after the pre-warm, the implement turn after the
  // plan) keeps everything the response before it read and wrote evaluated, but at most its last
  // token. (Within a turn, a random-weight model's tool call may not re-render as it was generated:
  // that is no matter of the mode.)
  const firsts = responses.flatMap((response, i) =>
    i > 0 && response.turn !== responses[i - 1]!.turn ? [{ response, previous: responses[i - 1]! }] : [],
  );
  expect(firsts.map(({ response }) => response.turn)).toEqual([0, 1]);
  for (const { response, previous } of firsts)
    expect(response.cached, JSON.stringify(responses)).toBeGreaterThanOrEqual(
      previous.input + previous.output - 1,
    );
}, 300_000);
