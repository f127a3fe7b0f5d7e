import { execFileSync } from "node:child_process";
import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { McpServer } from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, expect, test } from "vitest";
import { trustProject } from "../../config/project-trust.js";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";
import { scriptedAcpEnv } from "./test-support/acp-test-env.js";

// The MCP servers an editor passes in session/new are used for that session, under a project's
// rules: only in a trusted workspace, and each call asks for the person's approval.

const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

const script: ScriptFileEntry[] = [
  { match: "add them", toolCalls: [{ name: "mcp__everything__get-sum", arguments: '{"a":40,"b":2}' }] },
  { text: "Done." },
];

let env: NodeJS.ProcessEnv;
let acp: AcpTestClient;

async function workspace(): Promise<string> {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acp-mcp-")));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  return repo;
}

const editorServers: McpServer[] = [
  // Named as an editor might: made config-safe (everything).
  { name: "Everything", command: process.execPath, args: [EVERYTHING, "stdio"], env: [] },
  { type: "sse", name: "legacy", url: "http://127.0.0.1:9/sse", headers: [] },
];

beforeAll(async () => {
  const scratch = await mkdtemp(path.join(os.tmpdir(), "spark-acp-mcp-state-"));
  env = await scriptedAcpEnv(scratch, script);
  acp = AcpTestClient.start(os.tmpdir(), env);
  await acp.initialize();
});

afterAll(async () => {
  await acp?.close();
});

test("in a trusted workspace the editor's stdio server's tool is offered and called, after the person's approval", async () => {
  const repo = await workspace();
  await trustProject(repo, { env });
  const { sessionId } = await acp.agent.request("session/new", { cwd: repo, mcpServers: editorServers });
  const asked: string[] = [];
  acp.answer = (request) => {
    asked.push(request.toolCall.title ?? "");
    return { outcome: { outcome: "selected", optionId: "allow" } };
  };
  const { stopReason } = await acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "add them" }],
  });
  expect(stopReason).toBe("end_turn");
  expect(asked).toHaveLength(1);
  expect(asked[0]).toMatch(/everything/);
  const finished = acp
    .of(sessionId, "tool_call_update")
    .filter((u) => u.status === "completed" || u.status === "failed");
  expect(finished.at(-1)).toMatchObject({ status: "completed" });
  expect(JSON.stringify(finished.at(-1)!.rawOutput)).toContain("42");
  expect(acp.stderr).toMatch(/SSE MCP servers \(legacy\) are not used/);
});

test("in a workspace not trusted they do not start: the tool is not offered", async () => {
  const repo = await workspace();
  const { sessionId } = await acp.agent.request("session/new", { cwd: repo, mcpServers: editorServers });
  const asked: string[] = [];
  acp.answer = (request) => {
    asked.push(request.toolCall.title ?? "");
    return { outcome: { outcome: "selected", optionId: "allow" } };
  };
  await acp.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "add them" }] });
  expect(asked).toEqual([]);
  const finished = acp.of(sessionId, "tool_call_update").filter((u) => u.status === "failed");
  expect(JSON.stringify(finished.at(-1)!.rawOutput)).toMatch(/Unknown tool 'mcp__everything__get-sum'/);
});

test("an editor's server that dies at start does not take the session with it: its tool is just not there", async () => {
  const repo = await workspace();
  await trustProject(repo, { env });
  const dead: McpServer[] = [
    { name: "gone", command: process.execPath, args: ["-e", "process.exit(3)"], env: [] },
  ];
  const { sessionId } = await acp.agent.request("session/new", { cwd: repo, mcpServers: dead });
  const { stopReason } = await acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "hello there" }],
  });
  expect(stopReason).toBe("end_turn");
  expect(acp.text(sessionId)).toContain("Done.");
});

test("a server an editor sends that fails the host's schema is refused, naming it", async () => {
  const repo = await workspace();
  await expect(
    acp.agent.request("session/new", {
      cwd: repo,
      mcpServers: [{ name: "bad", command: "", args: [], env: [] }],
    }),
  ).rejects.toThrow(/command/);
});
