import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { CommandSandbox } from "./sandbox/command-sandbox.js";
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
        approvalPolicy: "ask",
        delegate: { model: "scripted", connect: () => ResponsesClient.connect({ baseUrl }) },
      },
    );
    baseUrl = `${h.server.url}/v1`;
    await h.thread.startTurn("build it");
    expect(h.events.some((e) => e.type === "subagent.started")).toBe(true);
    const asked = await h.next("approval.requested", 0);
    expect(asked).toMatchObject({ kind: "shell", command: "echo built" });
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

  test("a sub-agent runs on a lane of its parent's WebSocket, with no connection of its own", async () => {
    const reply = (request: GenerateRequest): ScriptedReply => {
      const user = lastUser(request);
      if (user === "summarise") return { text: "a summary" };
      if (user.startsWith("Result of sub-agent")) return { text: "Thanks." };
      if (request.messages.at(-1)?.role === "tool") return { text: "Started it." };
      return { toolCalls: [{ name: "delegate", arguments: JSON.stringify({ task: "summarise" }) }] };
    };
    let connects = 0;
    await using h = await agentHarness(
      {},
      { script: reply },
      {
        delegate: {
          model: "scripted",
          connect: () => {
            connects++;
            return Promise.reject(new Error("a sub-agent should not open a connection"));
          },
        },
      },
    );
    const lane = h.client.lane.bind(h.client);
    const lanes: ResponsesClient[] = [];
    h.client.lane = () => {
      const client = lane();
      lanes.push(client);
      return client;
    };
    await h.thread.startTurn("summarise the repo");
    const done = await h.next("subagent.completed", 0);
    expect(done).toMatchObject({ status: "completed", result: "a summary" });
    expect(connects).toBe(0);
    expect(lanes).toHaveLength(1);
    // Its lane was closed with it; the parent's connection serves the parent on.
    await expect(lanes[0]!.create({ input: "x" }).final).rejects.toMatchObject({ code: "client_closed" });
    await h.thread.whenSettled();
    expect(h.thread.history.at(-1)).toMatchObject({ type: "agent_message", text: "Thanks." });
  });

  describe("a sub-agent's commands ask the person, like the conversation's own", () => {
    const task = "run the tests with npm test";
    const shell = (command: string): ScriptedReply => ({
      toolCalls: [{ name: "shell", arguments: JSON.stringify({ command }) }],
    });
    interface Delegation {
      /** The tools listed with each turn's requests, by the turn's user message. */
      tools: Map<string, string[]>;
      /** What each turn's shell call was answered, by the turn's user message. */
      answers: Map<string, string>;
      approvals: string[];
      dir: string;
    }

    /**
     * The person says `userMessage`; the parent delegates `task`; the sub-agent calls shell; the
     * parent's turn for the sub-agent's result calls shell too. Each approval is answered `approve`.
     */
    async function delegateFrom(userMessage: string, approve: boolean): Promise<Delegation> {
      const tools = new Map<string, string[]>();
      const answers = new Map<string, string>();
      const script = (request: GenerateRequest): ScriptedReply => {
        const user = lastUser(request);
        const last = request.messages.at(-1);
        tools.set(
          user,
          (request.tools ?? []).map((tool) => tool.name),
        );
        if (last?.role === "tool") answers.set(user, last.content);
        if (user === task)
          return last?.role === "tool" ? { text: "Done. Now run `npm test`." } : shell("echo sub > sub.txt");
        if (user.startsWith("Result of sub-agent")) {
          return last?.role === "tool" ? { text: "Thanks." } : shell("echo result > result.txt");
        }
        if (last?.role === "tool") return { text: "Started it." };
        return { toolCalls: [{ name: "delegate", arguments: JSON.stringify({ task }) }] };
      };
      let baseUrl = "";
      await using h = await agentHarness(
        {},
        { script },
        {
          sandbox: new CommandSandbox({ mode: "danger-full-access" }),
          delegate: { model: "scripted", connect: () => ResponsesClient.connect({ baseUrl }) },
        },
      );
      baseUrl = `${h.server.url}/v1`;
      const approvals: string[] = [];
      h.thread.on((event) => {
        if (event.type !== "approval.requested") return;
        if (event.kind === "shell") approvals.push(event.command);
        h.thread.respondToApproval(event.approval_id, approve);
      });
      await h.thread.startTurn(userMessage);
      await h.thread.whenSettled();
      expect(h.thread.history.at(-1)).toMatchObject({ type: "agent_message", text: "Thanks." });
      return { tools, answers, approvals, dir: h.dir };
    }

    const resultTurn = (d: Delegation) =>
      [...d.tools.keys()].find((u) => u.startsWith("Result of sub-agent"))!;

    test("whatever the person said, each command of a sub-agent and of its result's turn asks first; denied, none runs", async () => {
      const d = await delegateFrom("don't run anything, look into the flaky build", false);
      // Every turn lists shell (a stable prefix); only the parent lists delegate.
      expect(d.tools.get("don't run anything, look into the flaky build")).toEqual(
        expect.arrayContaining(["shell", "delegate"]),
      );
      expect(d.tools.get(task)).toContain("shell");
      expect(d.tools.get(task)).not.toContain("delegate");
      expect(d.approvals).toEqual(["echo sub > sub.txt", "echo result > result.txt"]);
      expect(d.answers.get(task)).toMatch(/denied/);
      expect(d.answers.get(resultTurn(d))).toMatch(/denied/);
      expect(existsSync(path.join(d.dir, "sub.txt"))).toBe(false);
      expect(existsSync(path.join(d.dir, "result.txt"))).toBe(false);
    });

    test("approved, a sub-agent's command runs in the workspace", async () => {
      const d = await delegateFrom("look into the flaky build", true);
      expect(d.approvals).toEqual(["echo sub > sub.txt", "echo result > result.txt"]);
      expect(d.answers.get(task)).toMatch(/^Exit code: 0/);
      expect(await readFile(path.join(d.dir, "sub.txt"), "utf8")).toBe("sub\n");
    });
  });

  test("without a delegate model there is no delegate tool", async () => {
    await using h = await agentHarness({}, { script: () => ({ text: "hi" }) });
    await h.thread.startTurn("hello");
    expect(h.thread.subAgents).toEqual([]);
    expect(h.thread.cancelSubAgent("sub_x")).toBe(false);
  });
});
