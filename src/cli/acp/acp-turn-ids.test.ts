import type { RequestPermissionRequest, RequestPermissionResponse } from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { HostClient } from "../../client-core/host-client.js";
import type { StampedEvent } from "../../client-core/thread-view.js";
import { connectHost } from "../host-target.js";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { startScriptedServe, type WorkspaceServe } from "../test-support/spark-binary.js";
import { agentHostUrl } from "../workspace-server.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";

// `spark acp` bound a prompt to the first `turn.started` it saw and a permission to the last
// running shell call. With the ids the agent host now sends, each binds to its own.

const script: ScriptFileEntry[] = [
  {
    match: "web first",
    toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo from-the-web" }) }],
  },
  { match: "web queued", text: "Answered the browser's queued message." },
  { match: "from the editor", text: "Answered the editor." },
  {
    match: "two commands",
    toolCalls: [
      { name: "shell", arguments: JSON.stringify({ command: "echo one" }) },
      { name: "shell", arguments: JSON.stringify({ command: "echo two" }) },
    ],
  },
  { text: "Done." },
];

let serve: WorkspaceServe;
let acp: AcpTestClient;
let web: HostClient;

beforeAll(async () => {
  serve = await startScriptedServe(script, 200);
  acp = AcpTestClient.start(serve.repo, serve.env);
  web = await connectHost({ url: agentHostUrl(serve.state.url), key: serve.state.key });
  await acp.initialize();
});

afterAll(async () => {
  web?.dispose();
  await acp?.close();
  await serve?.stop();
});

/** Leaves the editor's permission requests unanswered until the agent withdraws them. */
const unanswered = () => new Promise<RequestPermissionResponse>(() => {});

test("a prompt sent behind a web-app turn and its queued message is bound to its own turn, not the first to start", async () => {
  const sessionId = await acp.newSession(serve.repo);
  const seen: StampedEvent[] = [];
  web.on("event", (event) => {
    if (event.thread_id === sessionId) seen.push(event);
  });
  const until = (test: (e: StampedEvent) => boolean) =>
    new Promise<StampedEvent>((resolve) => {
      const found = seen.find(test);
      if (found) resolve(found);
      const off = web.on("event", (event) => {
        if (test(event)) {
          off();
          resolve(event);
        }
      });
    });
  await web.resumeThread(sessionId);
  // The browser's turn waits on its command's approval, and the browser queues another message.
  acp.answer = unanswered;
  const webTurn = await web.request({ type: "turn.start", thread_id: sessionId, input: "web first" });
  const asked = await until((e) => e.type === "approval.requested");
  const webQueued = await web.request({ type: "turn.queue", thread_id: sessionId, input: "web queued" });

  // The editor's prompt waits behind both.
  const prompt = acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "hi from the editor" }],
  });
  const editorQueued = await until((e) => e.type === "turn.queued" && e.input === "hi from the editor");
  expect(editorQueued.type === "turn.queued" && editorQueued.turn_id).toMatch(/^turn_/);

  if (asked.type !== "approval.requested") throw new Error("not an approval");
  await web.request({
    type: "approval.respond",
    thread_id: sessionId,
    approval_id: asked.approval_id,
    approved: false,
  });
  // The browser's queued message starts first: the editor's prompt goes on.
  await until((e) => e.type === "turn.completed" && e.turn_id === webQueued.turn_id);
  expect(seen.find((e) => e.type === "turn.completed" && e.turn_id === webTurn.turn_id)).toBeDefined();
  const done = await prompt;
  expect(done.stopReason).toBe("end_turn");
  // It answered once its own turn ended (the browser hears of that end on its own connection).
  const editorTurn = editorQueued.type === "turn.queued" ? editorQueued.turn_id : undefined;
  await until((e) => e.type === "turn.completed" && e.turn_id === editorTurn);
  expect(acp.text(sessionId)).toContain("Answered the browser's queued message.");
  expect(acp.text(sessionId).endsWith("Answered the editor.")).toBe(true);
  // The browser's messages are shown; the editor's own is not echoed back to it.
  const users = acp
    .of(sessionId, "user_message_chunk")
    .map((u) => (u.content.type === "text" ? u.content.text : ""));
  expect(users).toEqual(["web first", "web queued"]);
});

test("two shell calls in one response: each permission names its own call, and only it goes in_progress", async () => {
  const sessionId = await acp.newSession(serve.repo);
  const asked: RequestPermissionRequest[] = [];
  acp.answer = (request) => {
    asked.push(request);
    return { outcome: { outcome: "selected", optionId: "allow" } };
  };
  const done = await acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "run two commands" }],
  });
  expect(done.stopReason).toBe("end_turn");
  const calls = acp.of(sessionId, "tool_call").map((call) => call.toolCallId);
  expect(new Set(calls).size).toBe(2);
  const finished = acp
    .of(sessionId, "tool_call_update")
    .filter((update) => update.status === "completed")
    .map((update) => [update.toolCallId, update.title]);
  expect(finished).toEqual([
    [calls[0], "$ echo one"],
    [calls[1], "$ echo two"],
  ]);
  expect(asked.map((request) => [request.toolCall.toolCallId, request.toolCall.title])).toEqual(finished);
  const progressed = acp
    .of(sessionId, "tool_call_update")
    .filter((update) => update.status === "in_progress")
    .map((update) => update.toolCallId);
  expect(progressed).toEqual(calls);
});
