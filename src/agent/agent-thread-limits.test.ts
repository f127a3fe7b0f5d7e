import { describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { SparkError } from "../protocol/errors.js";
import { agentHarness } from "./test-support/agent-harness.js";

const lastUser = (request: GenerateRequest) =>
  [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";

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
    await using h = await agentHarness({}, { script }, { allowShell: true, maxQueuedTurns: 2 });
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
    await using h = await agentHarness({}, { script }, { allowShell: true, maxQueuedBytes: 10 });
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
        allowShell: true,
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
});
