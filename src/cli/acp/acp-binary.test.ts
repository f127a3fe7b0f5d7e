import { execFileSync, spawn } from "node:child_process";
import { mkdtemp, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { RequestError } from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { sparkBin } from "../test-support/spark-binary.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";
import { scriptedAcpEnv } from "./test-support/acp-test-env.js";

const APP = "export const port = 8080;\n";
const PATCH =
  "*** Begin Patch\n*** Update File: app.ts\n@@\n-export const port = 8080;\n+export const port = 9090;\n*** End Patch";
const STORY = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");

const script: ScriptFileEntry[] = [
  { match: "hello", text: "Hello from Spark." },
  { match: "port", toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] },
  {
    match: "greet",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo hi-from-shell" }) }],
  },
  { match: "story", text: STORY },
  { match: "ponder", reasoning: "They want a ponder.", text: "Pondered." },
  { match: "change course", text: "Steered: a short answer." },
  {
    match: "release",
    text: "The plan:\n\n1. Bump the version\n2. Tag it\n- Publish to npm\n\nThen announce it.",
  },
  { text: "Done." },
];

let repo: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-acp-")));
  const scratch = await mkdtemp(path.join(os.tmpdir(), "spark-acp-state-"));
  await writeFile(path.join(repo, "app.ts"), APP);
  execFileSync("git", ["init", "-q"], { cwd: repo });
  env = await scriptedAcpEnv(scratch, script);
});

describe("spark acp, driven by the ACP SDK's client", () => {
  let acp: AcpTestClient;
  let sessionId: string;

  beforeAll(async () => {
    acp = AcpTestClient.start(repo, env);
  });
  afterAll(async () => {
    await acp?.close();
  });

  test("initialize declares what Spark does; session/new starts a thread with its modes", async () => {
    const init = await acp.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(init).toMatchObject({
      protocolVersion: 1,
      agentCapabilities: {
        loadSession: true,
        promptCapabilities: { image: false, audio: false, embeddedContext: true },
        sessionCapabilities: { list: {}, resume: {}, close: {} },
        _meta: { "_spark/steer": true },
      },
      agentInfo: { name: "spark" },
    });
    const created = await acp.agent.request("session/new", { cwd: repo, mcpServers: [] });
    sessionId = created.sessionId;
    expect(sessionId).toMatch(/^thr_/);
    expect(created.modes).toMatchObject({
      currentModeId: "default",
      availableModes: [{ id: "default" }, { id: "plan" }],
    });
  });

  test("a prompt answers in message chunks and ends the turn", async () => {
    const done = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "hello there" }],
    });
    expect(done.stopReason).toBe("end_turn");
    // Deltas that arrive together go out as one chunk, so how many there are depends on timing;
    // that they stream before the turn ends is what the cancel test below waits on.
    expect(acp.of(sessionId, "agent_message_chunk").length).toBeGreaterThanOrEqual(1);
    expect(acp.text(sessionId)).toBe("Hello from Spark.");
  });

  test("an apply_patch call streams as an edit with its diff, and the file changes", async () => {
    const done = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "set the port to 9090" }],
    });
    expect(done.stopReason).toBe("end_turn");
    const [call] = acp.of(sessionId, "tool_call");
    expect(call).toMatchObject({ kind: "edit", status: "pending" });
    const updates = acp.of(sessionId, "tool_call_update").filter((u) => u.toolCallId === call!.toolCallId);
    const file = path.join(repo, "app.ts");
    // While the model wrote it: the diff as far as written, before the call completed.
    const streaming = updates.filter(
      (u) => u.status === undefined && u.content?.some((c) => c.type === "diff"),
    );
    expect(streaming.length).toBeGreaterThan(0);
    expect(streaming[0]!.title).toBe("Edit app.ts");
    const last = updates.at(-1)!;
    expect(last).toMatchObject({
      status: "completed",
      title: "Edit app.ts",
      content: [
        {
          type: "diff",
          path: file,
          oldText: "export const port = 8080;\n",
          newText: "export const port = 9090;\n",
        },
      ],
    });
    expect(await readFile(file, "utf8")).toBe("export const port = 9090;\n");
  });

  test("a command asks permission: granted, it runs", async () => {
    acp.answer = () => ({ outcome: { outcome: "selected", optionId: "allow" } });
    const done = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "greet me" }],
    });
    expect(done.stopReason).toBe("end_turn");
    const asked = acp.permissions.at(-1)!;
    expect(asked).toMatchObject({
      sessionId,
      toolCall: { title: "$ echo hi-from-shell", kind: "execute" },
      options: [
        { optionId: "allow", kind: "allow_once" },
        { optionId: "reject", kind: "reject_once" },
      ],
    });
    // The question names the call the client was already shown.
    const calls = acp.of(sessionId, "tool_call");
    expect(calls.at(-1)!.toolCallId).toBe(asked.toolCall.toolCallId);
    expect(asked.toolCall.rawInput).toMatchObject({
      command: "echo hi-from-shell",
      cwd: repo,
      sandbox: "workspace-write",
    });
    const statuses = acp
      .of(sessionId, "tool_call_update")
      .filter((u) => u.toolCallId === asked.toolCall.toolCallId && u.status)
      .map((u) => u.status);
    expect(statuses).toEqual(["in_progress", "completed"]);
    const finished = acp.of(sessionId, "tool_call_update").at(-1)!;
    expect(finished).toMatchObject({ toolCallId: asked.toolCall.toolCallId, status: "completed" });
    expect(JSON.stringify(finished.content)).toContain("hi-from-shell");
  });

  test("a command asks permission: denied, it does not run and the model is told", async () => {
    acp.answer = () => ({ outcome: { outcome: "selected", optionId: "reject" } });
    const before = acp.permissions.length;
    const done = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "greet again" }],
    });
    expect(done.stopReason).toBe("end_turn");
    expect(acp.permissions.length).toBe(before + 1);
    const finished = acp.of(sessionId, "tool_call_update").at(-1)!;
    expect(finished.status).toBe("failed");
    expect(String(finished.rawOutput)).toMatch(/denied|declined|not approved/i);
    expect(JSON.stringify(finished.content)).not.toContain("hi-from-shell\\n");
  });

  test("an answer that is not one of the options offered denies the command", async () => {
    acp.answer = () => ({ outcome: { outcome: "selected", optionId: "allow_always_and_forever" } });
    const before = acp.permissions.length;
    const done = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "greet once more" }],
    });
    expect(done.stopReason).toBe("end_turn");
    expect(acp.permissions.length).toBe(before + 1);
    expect(acp.of(sessionId, "tool_call_update").at(-1)).toMatchObject({ status: "failed" });
  });

  test("session/cancel while a permission is asked: the question is withdrawn, nothing runs, the prompt is cancelled", async () => {
    let withdrawn: (() => void) | null = null;
    const gone = new Promise<void>((resolve) => {
      withdrawn = resolve;
    });
    acp.answer = () => new Promise(() => {});
    acp.onCancelled = () => withdrawn?.();
    const before = acp.permissions.length;
    const prompt = acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "greet later" }],
    });
    await acp.until(() => acp.permissions.length > before);
    await acp.agent.notify("session/cancel", { sessionId });
    await gone;
    expect((await prompt).stopReason).toBe("cancelled");
    expect(acp.of(sessionId, "tool_call_update").at(-1)).toMatchObject({ status: "failed" });
  });

  test("session/cancel mid-turn: the prompt resolves cancelled and the session takes the next one", async () => {
    const chunks = acp.of(sessionId, "agent_message_chunk").length;
    const prompt = acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "tell a story" }],
    });
    await acp.until(() => acp.of(sessionId, "agent_message_chunk").length > chunks);
    await expect(
      acp.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] }),
    ).rejects.toMatchObject({ code: -32600 });
    await acp.agent.notify("session/cancel", { sessionId });
    expect((await prompt).stopReason).toBe("cancelled");
    expect(acp.text(sessionId)).not.toContain(STORY);
    const next = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "hello" }],
    });
    expect(next.stopReason).toBe("end_turn");
  });

  test("_spark/steer redirects the running prompt; without one running it is refused", async () => {
    const chunks = acp.of(sessionId, "agent_message_chunk").length;
    const prompt = acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "another story" }],
    });
    await acp.until(() => acp.of(sessionId, "agent_message_chunk").length > chunks);
    await expect(
      acp.agent.request("_spark/steer", { sessionId, prompt: [{ type: "text", text: "change course" }] }),
    ).resolves.toEqual({});
    expect((await prompt).stopReason).toBe("end_turn");
    // The answer goes on redirected, in a new paragraph after the words streamed before the steer.
    const answer = acp.text(sessionId).slice(acp.text(sessionId).lastIndexOf("word0"));
    expect(answer).toMatch(/^word0[^\n]*\n\n[\s\S]*Steered: a short answer\.$/);
    // What this client sent (prompts, the steer) is never echoed back to it.
    expect(acp.of(sessionId, "user_message_chunk")).toEqual([]);
    expect(acp.text(sessionId)).not.toContain(STORY);

    const idle = acp.agent.request("_spark/steer", {
      sessionId,
      prompt: [{ type: "text", text: "change course" }],
    });
    await expect(idle).rejects.toBeInstanceOf(RequestError);
    await expect(
      acp.agent.request("_spark/steer", { sessionId, prompt: "not blocks" }),
    ).rejects.toMatchObject({ code: -32602 });
  });

  test("plan mode: session/set_mode switches the thread; an edit is refused; an unknown mode is invalid", async () => {
    await acp.agent.request("session/set_mode", { sessionId, modeId: "plan" });
    await writeFile(path.join(repo, "app.ts"), APP);
    const done = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "port again" }],
    });
    expect(done.stopReason).toBe("end_turn");
    expect(acp.of(sessionId, "tool_call_update").at(-1)).toMatchObject({ status: "failed" });
    expect(String(acp.of(sessionId, "tool_call_update").at(-1)!.rawOutput)).toMatch(
      /^Not run: plan mode is on/,
    );
    expect(await readFile(path.join(repo, "app.ts"), "utf8")).toBe(APP);
    expect(acp.of(sessionId, "plan")).toEqual([]);
    // A plan-mode answer's list reaches the client's plan view as well as its text.
    await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "plan the release" }],
    });
    expect(acp.of(sessionId, "plan")).toEqual([
      {
        sessionUpdate: "plan",
        entries: [
          { content: "Bump the version", priority: "medium", status: "pending" },
          { content: "Tag it", priority: "medium", status: "pending" },
          { content: "Publish to npm", priority: "medium", status: "pending" },
        ],
      },
    ]);
    await expect(acp.agent.request("session/set_mode", { sessionId, modeId: "yolo" })).rejects.toMatchObject({
      code: -32602,
    });
    await acp.agent.request("session/set_mode", { sessionId, modeId: "default" });
    const after = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "hello" }],
    });
    expect(after.stopReason).toBe("end_turn");
  });

  test("the model's reasoning streams as thought chunks, apart from the answer", async () => {
    const done = await acp.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "ponder it" }],
    });
    expect(done.stopReason).toBe("end_turn");
    const thoughts = acp
      .of(sessionId, "agent_thought_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""));
    expect(thoughts.join("")).toBe("They want a ponder.");
    expect(acp.text(sessionId)).toMatch(/Pondered\.$/);
    expect(acp.text(sessionId)).not.toContain("They want");
  });

  test("after a restart, the editor lists the session and loads it: the conversation is replayed before the answer", async () => {
    await acp.close();
    await using other = AcpTestClient.start(repo, env);
    await other.initialize();
    const { sessions } = await other.agent.request("session/list", { cwd: repo });
    expect(sessions.map((s) => s.sessionId)).toContain(sessionId);
    expect(sessions.find((s) => s.sessionId === sessionId)).toMatchObject({
      cwd: repo,
      title: expect.any(String),
    });

    const loaded = await other.agent.request("session/load", { sessionId, cwd: repo, mcpServers: [] });
    expect(loaded.modes?.currentModeId).toBe("default");
    const replayed = other.updates
      .filter((n) => n.sessionId === sessionId)
      .map((n) => n.update.sessionUpdate);
    expect(replayed[0]).toBe("user_message_chunk");
    expect(replayed).toContain("agent_message_chunk");
    expect(replayed).toContain("tool_call");
    // The reasoning replays as thoughts.
    expect(
      other
        .of(sessionId, "agent_thought_chunk")
        .map((u) => (u.content.type === "text" ? u.content.text : ""))
        .join(""),
    ).toBe("They want a ponder.");
    const userText = other
      .of(sessionId, "user_message_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""));
    expect(userText.slice(0, 2)).toEqual(["hello there", "set the port to 9090"]);
    expect(other.of(sessionId, "tool_call")[0]).toMatchObject({
      kind: "edit",
      status: "completed",
      content: [{ type: "diff", path: path.join(repo, "app.ts") }],
    });
    // And it goes on there.
    const next = await other.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "hello" }],
    });
    expect(next.stopReason).toBe("end_turn");

    await expect(
      other.agent.request("session/load", { sessionId: "thr_nope", cwd: repo, mcpServers: [] }),
    ).rejects.toBeInstanceOf(RequestError);
  });
});

describe("spark acp at the edge", () => {
  test("malformed messages get a JSON-RPC error each, stdout carries JSON-RPC only, and the agent lives on", async () => {
    const child = spawn(process.execPath, [sparkBin, "acp"], {
      cwd: repo,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    const lines = createInterface({ input: child.stdout });
    const seen: unknown[] = [];
    const waiting = new Map<number | null, (message: Record<string, unknown>) => void>();
    lines.on("line", (line) => {
      const message = JSON.parse(line) as Record<string, unknown>;
      seen.push(message);
      expect(message.jsonrpc).toBe("2.0");
      const id = (message.id ?? null) as number | null;
      waiting.get(id)?.(message);
      waiting.delete(id);
    });
    const send = (line: string, id: number | null) =>
      new Promise<Record<string, unknown>>((resolve) => {
        waiting.set(id, resolve);
        child.stdin.write(`${line}\n`);
      });
    const request = (id: number, method: string, params: unknown) =>
      send(JSON.stringify({ jsonrpc: "2.0", id, method, params }), id);

    expect(await send("this is not JSON", null)).toMatchObject({ error: { code: -32700 } });
    // Before initialize, a session request is refused.
    expect(await request(1, "session/new", { cwd: repo, mcpServers: [] })).toMatchObject({
      error: { code: -32600 },
    });
    expect(await request(2, "initialize", { protocolVersion: 1 })).toMatchObject({
      result: { protocolVersion: 1 },
    });
    expect(await request(3, "session/prompt", { sessionId: 5 })).toMatchObject({ error: { code: -32602 } });
    expect(await request(4, "no/such/method", {})).toMatchObject({ error: { code: -32601 } });
    expect(
      await request(5, "session/prompt", {
        sessionId: "thr_unknown",
        prompt: [{ type: "text", text: "hi" }],
      }),
    ).toMatchObject({
      error: { code: -32002 },
    });
    expect(await request(6, "session/new", { cwd: "relative/path", mcpServers: [] })).toMatchObject({
      error: { code: -32602, message: expect.stringContaining("absolute") },
    });
    expect(
      await request(7, "session/new", { cwd: path.join(repo, "missing"), mcpServers: [] }),
    ).toMatchObject({
      error: { code: -32602 },
    });
    expect(await send("[1,2]", null)).toMatchObject({ error: { code: -32600 } });
    const created = await request(8, "session/new", { cwd: repo, mcpServers: [] });
    const sessionId = (created.result as { sessionId: string }).sessionId;
    expect(
      await request(9, "session/prompt", {
        sessionId,
        prompt: [{ type: "image", data: "AAAA", mimeType: "image/png" }],
      }),
    ).toMatchObject({ error: { code: -32602, message: expect.stringContaining("image") } });
    expect(
      await request(10, "session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] }),
    ).toMatchObject({
      result: { stopReason: "end_turn" },
    });
    // Everything on stdout was a JSON-RPC message (the handler above parsed each line).
    expect(seen.length).toBeGreaterThan(10);
    child.stdin.end();
    await new Promise((resolve) => child.once("exit", resolve));
  });

  test("a line over 8 MiB ends the connection, saying why on stderr", async () => {
    const child = spawn(process.execPath, [sparkBin, "acp"], {
      cwd: repo,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.stdin.on("error", () => {});
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.stdin.write(
      `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"${"a".repeat(9 * 1024 * 1024)}"}}\n`,
    );
    expect(await exited).toBe(1);
    expect(stderr).toContain("over 8388608 bytes");
  });
});
