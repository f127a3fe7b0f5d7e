import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import type { GenerateRequest } from "../../engine/engine.js";
import type { McpServerState, ThreadEvent } from "../../protocol/agent.js";
import { agentHarness } from "../test-support/agent-harness.js";
import { call, recorded } from "../test-support/scripted-replies.js";
import { McpHub } from "./mcp-hub.js";
import type { McpServerSettings } from "./mcp-server-settings.js";

/** The real reference server from npm, run with this Node (its shebang needs `node` on PATH). */
const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const stdio = (extra: Partial<McpServerSettings> = {}): McpServerSettings => ({
  command: process.execPath,
  args: [EVERYTHING, "stdio"],
  source: "user",
  ...extra,
});

const hubs: McpHub[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((hub) => hub.dispose()));
  for (const child of children.splice(0)) child.kill();
});

async function startedHub(
  servers: Record<string, McpServerSettings>,
  notices: string[] = [],
): Promise<McpHub> {
  const hub = new McpHub({ servers, root: process.cwd(), onNotice: (line) => notices.push(line) });
  hubs.push(hub);
  hub.start();
  await hub.whenStarted();
  return hub;
}

/** The tool results the model read in a request, in order. */
const toolResults = (request: GenerateRequest | undefined) =>
  (request?.messages ?? []).filter((m) => m.role === "tool").map((m) => m.content);

function whenState(hub: McpHub, server: string, state: McpServerState): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (hub.list().find((info) => info.name === server)?.state !== state) return;
      off();
      resolve();
    };
    const off = hub.onChange(check);
    check();
  });
}

type Thread = {
  on(listener: (event: ThreadEvent) => void): unknown;
  respondToApproval(id: string, ok: boolean): boolean;
};

/** Answers each approval request of `thread` with `approved` once every listener saw it; returns the requests. */
function answerApprovals(thread: Thread, approved: boolean): ThreadEvent[] {
  const asked: ThreadEvent[] = [];
  thread.on((event) => {
    if (event.type !== "approval.requested") return;
    asked.push(event);
    queueMicrotask(() => thread.respondToApproval(event.approval_id, approved));
  });
  return asked;
}

/** Starts server-everything over streamable HTTP on a free port; resolves with its /mcp URL. */
async function everythingOverHttp(): Promise<string> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
  const child = spawn(process.execPath, [EVERYTHING, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    let said = "";
    child.stderr!.on("data", (chunk: Buffer) => {
      said += chunk.toString();
      if (said.includes("listening on port")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`server-everything exited (${code}): ${said}`)));
  });
  return `http://127.0.0.1:${port}/mcp`;
}

describe("MCP tools through the real agent (server-everything from npm, scripted model)", () => {
  test("over stdio: two tools called after the person approves each; results reach the model", async () => {
    const hub = await startedHub({ everything: stdio() });
    expect(hub.list()).toMatchObject([
      { name: "everything", state: "ready", transport: "stdio", source: "user", trusted: false },
    ]);
    expect(hub.list()[0]!.tools).toEqual(
      expect.arrayContaining(["mcp__everything__get-sum", "mcp__everything__echo"]),
    );
    const model = recorded([
      call("mcp__everything__get-sum", { a: 19, b: 23 }),
      call("mcp__everything__echo", { message: "hello from spark" }),
      { text: "42, and the echo came back." },
    ]);
    await using h = await agentHarness({}, { script: model.script }, { moreTools: () => hub.tools() });
    const approvals = answerApprovals(h.thread, true);
    await h.thread.startTurn("add 19 and 23, then echo a greeting");
    expect(approvals).toEqual([
      expect.objectContaining({
        kind: "mcp",
        server: "everything",
        tool: "get-sum",
        arguments: '{"a":19,"b":23}',
      }),
      expect.objectContaining({
        kind: "mcp",
        server: "everything",
        tool: "echo",
        arguments: '{"message":"hello from spark"}',
      }),
    ]);
    // The tools were offered under their mcp__ names, with the server's schemas.
    const offered = model.requests[0]!.tools?.map((tool) => tool.name) ?? [];
    expect(offered).toEqual(
      expect.arrayContaining(["read_file", "mcp__everything__get-sum", "mcp__everything__echo"]),
    );
    expect(toolResults(model.requests[1])[0]).toContain("42");
    expect(toolResults(model.requests[2])[1]).toContain("hello from spark");
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
  });

  test("a denied call never reaches the server and the model is told the user denied it", async () => {
    const hub = await startedHub({ everything: stdio() });
    const model = recorded([call("mcp__everything__get-sum", { a: 1, b: 2 }), { text: "ok" }]);
    await using h = await agentHarness({}, { script: model.script }, { moreTools: () => hub.tools() });
    answerApprovals(h.thread, false);
    await h.thread.startTurn("add 1 and 2");
    const [result] = toolResults(model.requests[1]);
    expect(result).toMatch(/user denied this call of everything · get-sum/);
    expect(result).not.toContain("3");
  });

  test("over streamable HTTP: a trusted server's calls run without asking", async () => {
    const url = await everythingOverHttp();
    const hub = await startedHub({ remote: { url, trusted: true, source: "user" } });
    expect(hub.list()).toMatchObject([{ name: "remote", state: "ready", transport: "http", trusted: true }]);
    const model = recorded([
      call("mcp__remote__get-sum", { a: 2, b: 40 }),
      call("mcp__remote__echo", { message: "over http" }),
      { text: "done" },
    ]);
    await using h = await agentHarness({}, { script: model.script }, { moreTools: () => hub.tools() });
    await h.thread.startTurn("add and echo");
    expect(h.events.some((e) => e.type === "approval.requested")).toBe(false);
    expect(toolResults(model.requests[1])[0]).toContain("42");
    expect(toolResults(model.requests[2])[1]).toContain("over http");
  });

  test("with --approval auto an untrusted server's call runs without asking", async () => {
    const hub = await startedHub({ everything: stdio() });
    const model = recorded([call("mcp__everything__get-sum", { a: 5, b: 6 }), { text: "11" }]);
    await using h = await agentHarness(
      {},
      { script: model.script },
      { moreTools: () => hub.tools(), approvalPolicy: "auto" },
    );
    await h.thread.startTurn("add 5 and 6");
    expect(h.events.some((e) => e.type === "approval.requested")).toBe(false);
    expect(toolResults(model.requests[1])[0]).toContain("11");
  });

  test("a server killed mid-call: stopped with a reason, the model gets mcp_unavailable, the turn ends cleanly", async () => {
    const notices: string[] = [];
    const hub = await startedHub({ everything: stdio() }, notices);
    const model = recorded([
      call("mcp__everything__trigger-long-running-operation", { duration: 60, steps: 60 }),
      { text: "The server went away." },
    ]);
    await using h = await agentHarness({}, { script: model.script }, { moreTools: () => hub.tools() });
    answerApprovals(h.thread, true);
    const resolved = h.next("approval.resolved");
    const turn = h.thread.startTurn("run the long operation");
    await resolved;
    const pid = hub.server("everything")!.pid!;
    const stopped = whenState(hub, "everything", "stopped");
    process.kill(pid, "SIGKILL");
    await stopped;
    await turn;
    const [result] = toolResults(model.requests[1]);
    expect(result).toMatch(/The MCP server 'everything' is not running \(the server exited/);
    const failed = h.events.find((e) => e.type === "item.completed" && e.item.type === "tool_call");
    expect(failed).toMatchObject({ item: { status: "failed" } });
    expect(h.events.find((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
    expect(hub.list()[0]).toMatchObject({
      state: "stopped",
      error: expect.stringContaining("the server exited"),
    });
    expect(notices).toEqual([expect.stringContaining("MCP server everything stopped: the server exited")]);
  });

  test("a server that cannot start fails with the reason; the other server and the turn are unaffected", async () => {
    const notices: string[] = [];
    const hub = await startedHub(
      {
        broken: { command: "/nonexistent/mcp-server", source: "user" },
        crashing: {
          command: process.execPath,
          args: ["-e", "console.error('no config file'); process.exit(3)"],
          source: "user",
        },
        everything: stdio({ trusted: true }),
      },
      notices,
    );
    const [broken, crashing, everything] = hub.list();
    expect(broken).toMatchObject({ state: "failed", error: expect.stringContaining("ENOENT"), tools: [] });
    expect(crashing).toMatchObject({ state: "failed", error: expect.stringContaining("no config file") });
    expect(everything).toMatchObject({ state: "ready" });
    expect(notices).toHaveLength(2);
    const model = recorded([call("mcp__everything__get-sum", { a: 1, b: 1 }), { text: "2" }]);
    await using h = await agentHarness({}, { script: model.script }, { moreTools: () => hub.tools() });
    await h.thread.startTurn("add 1 and 1");
    expect(model.requests[0]!.tools?.some((tool) => tool.name.startsWith("mcp__broken__"))).toBe(false);
    expect(toolResults(model.requests[1])[0]).toContain("2");
  });

  test("a disabled server is neither started nor listed; a stdio server gets only the safe environment", async () => {
    process.env.SPARK_TEST_SECRET = "hunter2";
    try {
      const hub = await startedHub({
        off: stdio({ enabled: false }),
        everything: stdio({ trusted: true, env: { DECLARED: "yes" } }),
      });
      expect(hub.list().map((info) => info.name)).toEqual(["everything"]);
      const model = recorded([call("mcp__everything__get-env", {}), { text: "ok" }]);
      await using h = await agentHarness({}, { script: model.script }, { moreTools: () => hub.tools() });
      await h.thread.startTurn("show the env");
      const [env] = toolResults(model.requests[1]);
      expect(env).toContain("DECLARED");
      expect(env).not.toContain("hunter2");
      expect(env).not.toContain("SPARK_TEST_SECRET");
    } finally {
      delete process.env.SPARK_TEST_SECRET;
    }
  });
});
