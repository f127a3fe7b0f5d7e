import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AgentThread } from "../agent/agent-thread.js";
import type { AgentThreadOptions } from "../agent/agent-thread-options.js";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import { recordResponseUsage } from "../agent/test-support/response-usage.js";
import { Workspace } from "../agent/workspace.js";
import { ResponsesClient } from "../client/responses-client.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import type { ThreadItem } from "../protocol/agent.js";
import { smollm2Path } from "../real-model/test-support/smollm2.js";
import { startTestServer, type TestServer } from "../server/test-support/test-server.js";
import { forkedInfo, forkedItems } from "./thread-fork.js";

/**
 * SmolLM2 when fetched (short, real answers), else the tiny synthetic model. The fork's and a fresh
 * evaluation's servers must not share an engine (its cache).
 */
async function llamaServer(): Promise<{ engine: LlamaEngine; t: TestServer }> {
  // A fixed draft cost: drafts sized by a measured one vary with timing (see stable-prefix-llama).
  const engine = await LlamaEngine.create({
    modelPath: smollm2Path() ?? (await testModelPath()),
    contextSize: 8192,
    draftTokenCost: 0.5,
  });
  return { engine, t: await startTestServer(engine) };
}

/** Each response of `client` stops after a few tokens: the answers compared need not be long. */
function capOutput(client: ResponsesClient): ResponsesClient {
  const create = client.create.bind(client);
  client.create = (body, options) => create({ ...body, max_output_tokens: 24 }, options);
  return client;
}

/** A thread on `client` that denies every command (a random model may ask for one). */
function threadOn(client: ResponsesClient, dir: string, more: Partial<AgentThreadOptions> = {}): AgentThread {
  const thread = new AgentThread({
    client,
    workspace: new Workspace(dir),
    instructions: buildSystemPrompt(dir, []),
    temperature: 0,
    maxToolRounds: 2,
    ...more,
  });
  thread.on((event) => {
    if (event.type === "approval.requested") thread.respondToApproval(event.approval_id, false);
  });
  return thread;
}

/** What the model wrote in a turn: its messages and calls, without ids. */
const turnOutput = (items: readonly ThreadItem[]) =>
  items.map((item) =>
    item.type === "agent_message"
      ? item.text
      : item.type === "tool_call"
        ? `${item.name} ${item.arguments}`
        : item.type,
  );

describe("thread.fork on the llama engine (SmolLM2, else the synthetic model)", () => {
  let parentSide: { engine: LlamaEngine; t: TestServer };
  let freshSide: { engine: LlamaEngine; t: TestServer };
  beforeAll(async () => {
    parentSide = await llamaServer();
    freshSide = await llamaServer();
  });
  afterAll(async () => {
    for (const side of [parentSide, freshSide]) {
      await side?.t.server.close();
      await side?.engine.dispose();
    }
  });

  // The history is a resumed session's, so the parent evaluates it as one prompt (its pre-warm), as
  // the fresh evaluation does: a token decoded one at a time gets KV values that differ in their
  // last bits from the same token evaluated in a batch, and a greedy answer can then differ at a
  // near-tie with or without any copy.
  const history: ThreadItem[] = [
    { type: "user_message", id: "msg_u1", text: "Say hello." },
    { type: "agent_message", id: "msg_a1", text: "Hello! How can I help you today?" },
    { type: "user_message", id: "msg_u2", text: "What is a linked list?" },
    { type: "agent_message", id: "msg_a2", text: "A list whose nodes each point to the next one." },
  ];

  test("a fork from a middle turn copies the parent's KV and answers as a fresh evaluation of that history", {
    timeout: 600_000,
  }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-fork-llama-"));
    execFileSync("git", ["init", "-q"], { cwd: dir });
    const info = { id: "thr_parent", title: "Lists", cwd: dir, model: "", createdAt: "", updatedAt: "" };
    await using client = capOutput(
      await ResponsesClient.connect({ baseUrl: `${parentSide.t.server.url}/v1` }),
    );
    let turn = 0;
    const responses = recordResponseUsage(client, () => turn);
    const parent = threadOn(client, dir, { resume: { thread: info, items: history } });
    await parent.prewarm();
    turn = 1;
    await parent.startTurn("Now say goodbye.");
    const items = forkedItems(parent, "msg_u2");
    expect(items).toEqual(history);

    turn = 2;
    const fork = threadOn(client, dir, { resume: { thread: forkedInfo(parent.info), items } });
    await fork.prewarm();
    turn = 3;
    await fork.startTurn("Write a haiku.");
    const forkAnswer = turnOutput(fork.history.slice(items.length));

    // The fork's first request started its chain over: the engine copied the parent's cells of
    // the whole history instead of evaluating it.
    const parentPrewarm = responses.find((response) => response.turn === 0)!;
    const forkPrewarm = responses.find((response) => response.turn === 2)!;
    expect(forkPrewarm.input).toBe(parentPrewarm.input);
    expect(forkPrewarm.cached).toBe(forkPrewarm.input);
    // The parent keeps its own cache: its next turn reuses its whole conversation so far.
    turn = 4;
    await parent.startTurn("Thanks.");
    const parentLast = responses.filter((response) => response.turn === 1).at(-1)!;
    const parentNext = responses.find((response) => response.turn === 4)!;
    expect(parentNext.cached).toBeGreaterThanOrEqual(parentLast.input);

    // A fresh evaluation of the same history, on an engine that holds nothing of it.
    await using freshClient = capOutput(
      await ResponsesClient.connect({ baseUrl: `${freshSide.t.server.url}/v1` }),
    );
    const freshUsage = recordResponseUsage(freshClient, () => 0);
    const fresh = threadOn(freshClient, dir, { resume: { thread: forkedInfo(parent.info), items } });
    await fresh.prewarm();
    await fresh.startTurn("Write a haiku.");
    expect(freshUsage[0]!.cached).toBe(0);
    expect(forkAnswer.length).toBeGreaterThan(1);
    expect(forkAnswer).toEqual(turnOutput(fresh.history.slice(items.length)));
  });
});
