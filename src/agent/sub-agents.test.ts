import { describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { agentHarness } from "./test-support/agent-harness.js";

/** The tools offered with each task's requests. */
const offered = new Map<string, string[]>();

const lastUser = (request: GenerateRequest) =>
  [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";

/** The parent delegates `run make`; the sub-agent runs it (after approval) and reports. */
function script(request: GenerateRequest): ScriptedReply {
  const last = request.messages.at(-1);
  const user = lastUser(request);
  offered.set(
    user,
    (request.tools ?? []).map((tool) => tool.name),
  );
  if (user === "run make") {
    return last?.role === "tool"
      ? { text: `made: ${last.content.trim()}` }
      : { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo built" }) }] };
  }
  if (last?.role === "tool") return { text: "Started it." };
  if (user.startsWith("Result of sub-agent")) return { text: "Thanks." };
  return { toolCalls: [{ name: "delegate", arguments: JSON.stringify({ task: "run make" }) }] };
}

describe("sub-agents", () => {
  test("a sub-agent's approval is asked on the parent thread and answered there", async () => {
    let baseUrl = "";
    await using h = await agentHarness(
      { Makefile: "all:\n" },
      { script },
      {
        allowShell: true,
        approvalPolicy: "ask",
        delegate: { model: "scripted", connect: () => ResponsesClient.connect({ baseUrl }) },
      },
    );
    baseUrl = `${h.server.url}/v1`;
    await h.thread.startTurn("build it");
    expect(h.events.some((e) => e.type === "subagent.started")).toBe(true);
    const asked = await h.next("approval.requested", 0);
    expect(asked.command).toBe("echo built");
    h.thread.respondToApproval(asked.approval_id, true);
    const done = await h.next("subagent.completed", 0);
    expect(done).toMatchObject({ status: "completed" });
    expect(done.result).toContain("made:");
    expect(done.result).toContain("built");
    // The sub-agent was offered no delegate tool of its own; the parent was.
    expect(offered.get("build it")).toContain("delegate");
    expect(offered.get("run make")).toContain("shell");
    expect(offered.get("run make")).not.toContain("delegate");
    await h.next("turn.completed", h.events.indexOf(done));
    await h.thread.whenSettled();
    expect(h.thread.history.at(-1)).toMatchObject({ type: "agent_message", text: "Thanks." });
  });

  describe("the shell tool follows the person's words, never the model's", () => {
    const task = "run the tests with npm test";
    /** The parent delegates `task`; the sub-agent's answer asks for a command too. */
    function delegating(seen: Map<string, string[]>) {
      return (request: GenerateRequest): ScriptedReply => {
        const user = lastUser(request);
        seen.set(
          user,
          (request.tools ?? []).map((tool) => tool.name),
        );
        if (user === task) return { text: "Done. Now run `npm test` to check." };
        if (request.messages.at(-1)?.role === "tool") return { text: "Started it." };
        if (user.startsWith("Result of sub-agent")) return { text: "Thanks." };
        return { toolCalls: [{ name: "delegate", arguments: JSON.stringify({ task }) }] };
      };
    }

    async function delegateFrom(userMessage: string): Promise<Map<string, string[]>> {
      const seen = new Map<string, string[]>();
      let baseUrl = "";
      await using h = await agentHarness(
        {},
        { script: delegating(seen) },
        { delegate: { model: "scripted", connect: () => ResponsesClient.connect({ baseUrl }) } },
      );
      baseUrl = `${h.server.url}/v1`;
      await h.thread.startTurn(userMessage);
      await h.thread.whenSettled();
      expect(h.thread.history.at(-1)).toMatchObject({ type: "agent_message", text: "Thanks." });
      return seen;
    }

    test("a model-written task asking for commands gets no shell when the person did not ask", async () => {
      const seen = await delegateFrom("look into the flaky build");
      expect(seen.get("look into the flaky build")).not.toContain("shell");
      expect(seen.get(task)).toEqual(expect.arrayContaining(["read_file", "apply_patch"]));
      expect(seen.get(task)).not.toContain("shell");
      // The sub-agent's result arrives as a message the model wrote: no shell for that turn either.
      const resultTurn = [...seen.keys()].find((user) => user.startsWith("Result of sub-agent"))!;
      expect(resultTurn).toContain("run `npm test`");
      expect(seen.get(resultTurn)).not.toContain("shell");
    });

    test("the sub-agent gets the shell tool when the person's own turn asked for commands", async () => {
      const seen = await delegateFrom("please run the test suite and fix what fails");
      expect(seen.get("please run the test suite and fix what fails")).toContain("shell");
      expect(seen.get(task)).toContain("shell");
      expect(seen.get(task)).not.toContain("delegate");
    });
  });

  test("without a delegate model there is no delegate tool", async () => {
    await using h = await agentHarness({}, { script: () => ({ text: "hi" }) });
    await h.thread.startTurn("hello");
    expect(h.thread.subAgents).toEqual([]);
    expect(h.thread.cancelSubAgent("sub_x")).toBe(false);
  });
});
