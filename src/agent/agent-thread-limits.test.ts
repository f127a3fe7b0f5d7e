import { describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { SparkError } from "../protocol/errors.js";
import { CommandSandbox } from "./sandbox/command-sandbox.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { DEFAULT_MAX_TOOL_ROUNDS } from "./turn-runner.js";

const lastUser = (request: GenerateRequest) =>
  [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";

/** Where `run it`'s command would run: anywhere (it only needs to wait for approval), so no bwrap. */
const anywhere = () => new CommandSandbox({ mode: "danger-full-access" });

/** `run`: a shell call that waits for approval (keeps the turn busy); `delegate twice`: two sub-agents. */
function script(request: GenerateRequest): ScriptedReply {
  const last = request.messages.at(-1);
  const user = lastUser(request);
  if (last?.role === "tool") return { text: "ok" };
  if (user === "run it")
    return { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "true" }) }] };
  if (user === "delegate twice") {
    const task = JSON.stringify({ task: "run it" });
    return {
      toolCalls: [
        { name: "delegate", arguments: task },
        { name: "delegate", arguments: task },
      ],
    };
  }
  return { text: `echo: ${user}` };
}

function limitError(run: () => void): SparkError {
  try {
    run();
  } catch (error) {
    if (error instanceof SparkError) return error;
    throw error;
  }
  throw new Error("expected a SparkError");
}

describe("an agent thread's limits", () => {
  test("turns queued behind a busy turn are capped by count: the next is refused, none dropped", async () => {
    await using h = await agentHarness({}, { script }, { maxQueuedTurns: 2, sandbox: anywhere() });
    const asked = h.next("approval.requested");
    const turn = h.thread.startTurn("run it");
    const approval = await asked;
    h.thread.enqueue("one");
    h.thread.enqueue("two");
    const refused = limitError(() => h.thread.enqueue("three"));
    expect(refused.code).toBe("limit_reached");
    expect(refused.status).toBe(429);
    expect(h.thread.queuedTurns).toBe(2);
    h.thread.respondToApproval(approval.approval_id, true);
    await turn;
    const started = h.events.filter((e) => e.type === "turn.started").map((e) => e.input);
    expect(started).toEqual(["run it", "one", "two"]);
  });

  test("queued inputs are capped in bytes (UTF-8): a queue that would pass the budget is refused", async () => {
    await using h = await agentHarness({}, { script }, { maxQueuedBytes: 10, sandbox: anywhere() });
    const asked = h.next("approval.requested");
    const turn = h.thread.startTurn("run it");
    const approval = await asked;
    h.thread.enqueue("ééé"); // 6 bytes
    expect(limitError(() => h.thread.enqueue("ééé")).code).toBe("limit_reached"); // 12 > 10
    h.thread.enqueue("abcd"); // 10 bytes: at the budget, accepted
    expect(h.thread.queuedTurns).toBe(2);
    h.thread.respondToApproval(approval.approval_id, true);
    await turn;
    expect(h.events.filter((e) => e.type === "turn.started").map((e) => e.input)).toEqual([
      "run it",
      "ééé",
      "abcd",
    ]);
  });

  test("at the cap of running sub-agents, delegate answers the model an error it can act on", async () => {
    let baseUrl = "";
    await using h = await agentHarness(
      {},
      { script },
      {
        delegate: { model: "scripted", maxRunning: 1, connect: () => ResponsesClient.connect({ baseUrl }) },
      },
    );
    baseUrl = `${h.server.url}/v1`;
    await h.thread.startTurn("delegate twice");
    const calls = h.events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "tool_call" ? [e.item] : [],
    );
    expect(calls.map((call) => call.status)).toEqual(["completed", "failed"]);
    expect(calls[1]!.output).toMatch(/1 sub-agents are running already/);
    expect(h.thread.subAgents.filter((sub) => sub.status === "running")).toHaveLength(1);
    h.thread.cancelSubAgents();
    await h.thread.whenSettled();
  });

  test("a turn stops after maxToolRounds rounds of tool calls, tells the person why, and the next turn goes on", async () => {
    const seen: GenerateRequest[] = [];
    const looping = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return lastUser(request) === "go on" && request.messages.at(-1)?.role === "user"
        ? { text: "Where I was: listing." }
        : { toolCalls: [{ name: "list_dir", arguments: JSON.stringify({ path: "." }) }] };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script: looping }, { maxToolRounds: 3 });
    await h.thread.startTurn("list forever");
    const ended = h.events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "tool_call" ? [e.item] : [],
    );
    // Three rounds ran; the fourth response's call ended too, failed and unrun.
    expect(ended.map((item) => item.status)).toEqual(["completed", "completed", "completed", "failed"]);
    expect(ended[3]!.output).toMatch(/^Not run: this turn reached its limit of 3 rounds/);
    // Three rounds ran; the fourth response's call did not.
    expect(seen).toHaveLength(4);
    const done = h.events.find((e) => e.type === "turn.completed");
    expect(done).toMatchObject({ status: "failed", error: { code: "limit_reached" } });
    if (done?.type !== "turn.completed") throw new Error("no turn.completed");
    expect(done.error?.message).toMatch(/^Stopped after 3 rounds of tool calls/);
    expect(done.error?.message).toContain("--max-tool-rounds");
    // The call left unrun is answered in the next turn's request, so the conversation stays valid.
    await h.thread.startTurn("go on");
    const resumed = seen[4]!.messages;
    expect(resumed.at(-2)).toMatchObject({
      role: "tool",
      content: expect.stringMatching(/^Not run: this turn reached its limit of 3 rounds/),
    });
    expect(resumed.at(-1)).toEqual({ role: "user", content: "go on" });
    expect(h.events.filter((e) => e.type === "turn.completed").at(-1)).toMatchObject({ status: "completed" });
  });

  test(`without a setting a turn runs at most ${DEFAULT_MAX_TOOL_ROUNDS} rounds of tool calls`, async () => {
    let requests = 0;
    // A different path each time: the same call again and again would be stopped as repetition first.
    const looping = (): ScriptedReply => {
      requests++;
      return { toolCalls: [{ name: "list_dir", arguments: JSON.stringify({ path: `./${requests}` }) }] };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script: looping });
    await h.thread.startTurn("list forever");
    expect(DEFAULT_MAX_TOOL_ROUNDS).toBe(50);
    const ran = h.events.filter(
      (e) =>
        e.type === "item.completed" && e.item.type === "tool_call" && !e.item.output?.startsWith("Not run"),
    );
    expect(ran).toHaveLength(50);
    expect(requests).toBe(51);
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({
      status: "failed",
      reason: "max_tool_rounds",
      error: { code: "limit_reached" },
    });
  });

  test("a turn that answers without tools is not limited by the round cap", async () => {
    const seen: GenerateRequest[] = [];
    const twice = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return seen.length <= 2
        ? { toolCalls: [{ name: "list_dir", arguments: JSON.stringify({ path: "." }) }] }
        : { text: "Two listings." };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script: twice }, { maxToolRounds: 2 });
    await h.thread.startTurn("list twice");
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
    expect(h.thread.history.at(-1)).toMatchObject({ type: "agent_message", text: "Two listings." });
  });
});
