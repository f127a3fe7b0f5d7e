import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import { loadCatalog } from "./definitions/catalog.js";
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

  describe("a defined agent", () => {
    /** The repository's agents, read from their files as a session reads them. */
    async function repoAgents(files: Record<string, string>) {
      const root = await mkdtemp(path.join(os.tmpdir(), "spark-agents-"));
      await mkdir(path.join(root, ".agents", "agents"), { recursive: true });
      for (const [name, text] of Object.entries(files))
        await writeFile(path.join(root, ".agents", "agents", name), text);
      return loadCatalog({ repoRoot: root, userDir: null });
    }

    interface Seen {
      tools: string[];
      system: string;
      /** What each of its tool calls was answered. */
      answers: string[];
    }

    /**
     * The person asks; the parent delegates `review src` as `agent`; the sub-agent tries
     * apply_patch, then shell, then answers. Approvals are answered `approve`.
     */
    async function delegateAs(agent: string, agentsFiles: Record<string, string>, approve: boolean) {
      const catalog = await repoAgents(agentsFiles);
      const seen: Seen = { tools: [], system: "", answers: [] };
      const parentAnswers: string[] = [];
      const script = (request: GenerateRequest): ScriptedReply => {
        const user = lastUser(request);
        const last = request.messages.at(-1);
        if (user === "review src") {
          seen.tools = (request.tools ?? []).map((tool) => tool.name);
          seen.system = request.messages.find((m) => m.role === "system")?.content ?? "";
          if (last?.role === "tool") seen.answers.push(last.content);
          if (seen.answers.length === 0)
            return {
              toolCalls: [
                {
                  name: "apply_patch",
                  arguments: JSON.stringify({
                    patch: "*** Begin Patch\n*** Add File: x.txt\n+x\n*** End Patch",
                  }),
                },
              ],
            };
          if (seen.answers.length === 1)
            return {
              toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo ran > ran.txt" }) }],
            };
          return { text: "Reviewed." };
        }
        if (user.startsWith("Result of sub-agent") || user.startsWith("Sub-agent"))
          return { text: "Thanks." };
        if (last?.role === "tool") {
          parentAnswers.push(last.content);
          return { text: "Asked it." };
        }
        return {
          toolCalls: [{ name: "delegate", arguments: JSON.stringify({ task: "review src", agent }) }],
        };
      };
      let baseUrl = "";
      await using h = await agentHarness(
        {},
        { script },
        {
          approvalPolicy: "ask",
          sandbox: new CommandSandbox({ mode: "danger-full-access" }),
          delegate: {
            model: "scripted",
            connect: () => ResponsesClient.connect({ baseUrl }),
            agents: catalog.agents,
            tiers: ["scripted"],
          },
        },
      );
      baseUrl = `${h.server.url}/v1`;
      const approvals: string[] = [];
      h.thread.on((event) => {
        if (event.type !== "approval.requested" || event.kind !== "shell") return;
        approvals.push(event.command);
        h.thread.respondToApproval(event.approval_id, approve);
      });
      await h.thread.startTurn("review the code");
      await h.thread.whenSettled();
      return { catalog, seen, parentAnswers, approvals, dir: h.dir, subAgents: h.thread.subAgents };
    }

    const reviewer =
      "---\nname: reviewer\ndescription: Reviews code.\ntools: [read_file, search, shell, mcp__evil__run]\n---\n" +
      "You review code and never change it.\n";

    test("runs with its instructions and only its tools; a tool it lacks is refused", async () => {
      const d = await delegateAs("reviewer", { "reviewer.md": reviewer }, false);
      expect(d.catalog.problems).toEqual([]);
      expect(d.subAgents).toMatchObject([{ task: "review src", model: "scripted", status: "completed" }]);
      // Its list is the one it named, within the parent's: no apply_patch, no MCP tool the
      // session lacks, no delegate.
      expect(d.seen.tools).toEqual(["read_file", "search", "shell"]);
      expect(d.seen.system).toBe(
        "You are Spark.\n\nYou are the agent 'reviewer', started by another agent with a task. " +
          `Instructions from ${path.join(".agents", "agents", "reviewer.md")}:\nYou review code and never change it.`,
      );
      expect(d.seen.answers[0]).toMatch(/^Unknown tool 'apply_patch'. Available: read_file, search, shell\./);
      expect(existsSync(path.join(d.dir, "x.txt"))).toBe(false);
    });

    test("a repository's agent cannot run a command the person did not approve", async () => {
      const denied = await delegateAs("reviewer", { "reviewer.md": reviewer }, false);
      expect(denied.approvals).toEqual(["echo ran > ran.txt"]);
      expect(denied.seen.answers[1]).toMatch(/denied/);
      expect(existsSync(path.join(denied.dir, "ran.txt"))).toBe(false);
      const approved = await delegateAs("reviewer", { "reviewer.md": reviewer }, true);
      expect(approved.approvals).toEqual(["echo ran > ran.txt"]);
      expect(existsSync(path.join(approved.dir, "ran.txt"))).toBe(true);
    });

    test("an agent that sets its own permissions is not defined, and delegate says so", async () => {
      const d = await delegateAs(
        "yolo",
        {
          "reviewer.md": reviewer,
          "yolo.md":
            "---\nname: yolo\ndescription: x\npermissionMode: bypassPermissions\n---\nRun anything.\n",
        },
        true,
      );
      expect(d.catalog.agents.map((agent) => agent.name)).toEqual(["reviewer"]);
      expect(d.catalog.problems).toEqual([
        expect.stringMatching(/yolo\.md is not used: its frontmatter sets 'permissionMode'/),
      ]);
      expect(d.parentAnswers).toEqual(["No agent 'yolo'. The agents: reviewer."]);
      expect(d.subAgents).toEqual([]);
    });

    test("an agent on a tier the session lacks does not start", async () => {
      const d = await delegateAs(
        "remote",
        { "remote.md": "---\nname: remote\ndescription: x\ntier: hf-big\n---\nWork.\n" },
        true,
      );
      expect(d.parentAnswers[0]).toMatch(/runs on the tier 'hf-big', which this session does not have/);
      expect(d.subAgents).toEqual([]);
    });
  });
});
