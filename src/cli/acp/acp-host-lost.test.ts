import { RequestError } from "@agentclientprotocol/sdk";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { ScriptFileEntry } from "../test-support/scripted-script.js";
import { startScriptedServe, type WorkspaceServe } from "../test-support/spark-binary.js";
import { AcpTestClient } from "./test-support/acp-test-client.js";

// Long enough at 50 tokens a second that the server is gone well before the story ends.
const STORY = Array.from({ length: 2000 }, (_, i) => `word${i}`).join(" ");
const script: ScriptFileEntry[] = [{ match: "story", text: STORY }, { text: "Done." }];

let serve: WorkspaceServe;
let acp: AcpTestClient;

beforeAll(async () => {
  serve = await startScriptedServe(script, 50);
  acp = AcpTestClient.start(serve.repo, serve.env);
});

afterAll(async () => {
  await acp?.close();
  await serve?.stop();
});

test("the attached spark serve dies mid-turn: the prompt ends with a JSON-RPC error, and the agent lives on", async () => {
  await acp.initialize();
  const sessionId = await acp.newSession(serve.repo);
  expect(acp.stderr).toContain("run on spark serve");
  const prompt = acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "tell a story" }],
  });
  // Settled either way from here, so the rejection below is never unhandled.
  const outcome = prompt.then(
    (answer) => ({ answer }),
    (error: unknown) => ({ error }),
  );
  await acp.until(() => acp.text(sessionId).length > 0);

  // As a crash or a restart does: no turn.completed ever comes.
  const exited = new Promise((resolve) => serve.child.once("exit", resolve));
  serve.child.kill("SIGKILL");
  await exited;

  const ended = await outcome;
  expect(ended).toMatchObject({ error: expect.any(RequestError) });
  const error = (ended as { error: RequestError }).error;
  expect(error.code).toBe(-32603);
  expect(error.message).toMatch(/connection to Spark's agent host was lost/);
  expect(error.data).toEqual({ code: "disconnected" });
  expect(acp.text(sessionId)).not.toContain(STORY);

  // The process still answers, and says the session is busy no more: the next prompt is tried
  // (and fails while the host is gone) rather than refused as a second running prompt.
  await expect(acp.agent.request("session/list", { cwd: serve.repo })).resolves.toMatchObject({
    sessions: expect.any(Array),
  });
  const again = acp.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "tell a story" }],
  });
  await expect(again).rejects.toBeInstanceOf(RequestError);
  await expect(again).rejects.not.toMatchObject({ code: -32600 });
});
