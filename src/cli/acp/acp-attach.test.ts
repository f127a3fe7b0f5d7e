import { afterAll, beforeAll, expect, test } from "vitest";
import type { HostClient } from "../../client-core/host-client.js";
import type { StampedEvent } from "../../client-core/thread-view.js";
import { connectHost } from "../host-target.js";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { startScriptedServe, type WorkspaceServe } from "../test-support/spark-binary.js";
import { agentHostUrl } from "../workspace-server.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";

const script: ScriptFileEntry[] = [
  { match: "from the editor", text: "Answered in the editor." },
  { match: "from the browser", text: "Answered for the browser." },
  { text: "Done." },
];

let serve: WorkspaceServe;
let acp: AcpTestClient;
let web: HostClient;

beforeAll(async () => {
  serve = await startScriptedServe(script, 200);
  acp = AcpTestClient.start(serve.repo, serve.env);
  // The web app's side: the client core over the server's agent host, with the server's key.
  web = await connectHost({ url: agentHostUrl(serve.state.url), key: serve.state.key });
});

afterAll(async () => {
  web?.dispose();
  await acp?.close();
  await serve?.stop();
});

test("with spark serve running for the workspace, an editor's session is a thread there, live in both directions", async () => {
  await acp.initialize();
  const sessionId = await acp.newSession(serve.repo);
  expect(acp.stderr).toContain(`run on spark serve at ${agentHostUrl(serve.state.url)}`);

  // The web app follows the editor's thread and sees its turn as it runs.
  const seen: StampedEvent[] = [];
  web.on("event", (event) => {
    if (event.thread_id === sessionId) seen.push(event);
  });
  await web.resumeThread(sessionId);
  const done = await acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "hi from the editor" }],
  });
  expect(done.stopReason).toBe("end_turn");
  const completed = () =>
    seen
      .flatMap((e) => (e.type === "item.completed" ? [e.item] : []))
      .filter((i) => i.type === "agent_message");
  await new Promise<void>((resolve) => {
    const check = () => completed().length > 0 && resolve();
    check();
    web.on("event", check);
  });
  expect(completed()[0]).toMatchObject({ text: "Answered in the editor." });
  expect((await web.list(serve.repo)).map((t) => t.id)).toContain(sessionId);

  // A turn the browser starts shows in the editor: the person's message and the answer.
  await web.request({ type: "turn.start", thread_id: sessionId, input: "hi from the browser" });
  await acp.until(() => acp.text(sessionId).includes("Answered for the browser."));
  const users = acp
    .of(sessionId, "user_message_chunk")
    .map((u) => (u.content.type === "text" ? u.content.text : ""));
  expect(users).toEqual(["hi from the browser"]);
});
