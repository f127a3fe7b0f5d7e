import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "../host/test-support/host-client.js";
import { type ServeStack, startServe } from "./serve-stack.js";

// A mode switched between turns used to live only in memory: the transcript saved the thread's
// info when a turn completed, so a face reopening the session (ACP's session/load, a restarted
// `spark serve`) found the mode it had before the switch.

const stacks: ServeStack[] = [];
const clients: HostTestClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.ws.close();
  for (const stack of stacks.splice(0)) await stack.close();
});

async function serve(cwd: string, sessions: string): Promise<HostTestClient> {
  const engine = new ScriptedEngine({ script: () => ({ text: "ok" }), tokensPerSecond: 1000 });
  const stack = await startServe({ engine, cwd, sessionsDir: sessions, webDir: null, apiKeys: [] });
  stacks.push(stack);
  const client = await connectHost(`${stack.server.url.replace("http", "ws")}/v1/agent`);
  clients.push(client);
  return client;
}

async function request(client: HostTestClient, id: string, message: object): Promise<HostTestEvent> {
  const answer = client.next((e) => e.request_id === id && (e.type === "ack" || e.type === "error"));
  client.send({ ...message, request_id: id });
  return answer;
}

async function resumedMode(cwd: string, sessions: string, threadId: string): Promise<unknown> {
  const client = await serve(cwd, sessions);
  const from = client.events.length;
  expect(await request(client, "resume", { type: "thread.resume", thread_id: threadId })).toMatchObject({
    type: "ack",
  });
  const started = client.events
    .slice(from)
    .find((e) => e.type === "thread.started" || (e.type === "thread.history" && e.thread));
  const info = (started?.thread ?? {}) as { mode?: string };
  return info.mode ?? "default";
}

test("a mode switched between turns is saved: the session resumed by a new spark serve is in that mode", async () => {
  const cwd = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-info-ws-")));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-info-sessions-"));
  const client = await serve(cwd, sessions);
  const started = await request(client, "start", { type: "thread.start" });
  const threadId = started.thread_id as string;
  const from = client.events.length;
  await request(client, "turn", { type: "turn.start", thread_id: threadId, input: "hello" });
  await client.next((e) => e.type === "turn.completed" && e.thread_id === threadId, from);

  expect(
    await request(client, "plan", { type: "thread.set_mode", thread_id: threadId, mode: "plan" }),
  ).toMatchObject({ type: "ack" });
  await stacks.pop()!.close();
  expect(await resumedMode(cwd, sessions, threadId)).toBe("plan");

  // And back: the default mode is saved as well.
  const again = clients.at(-1)!;
  expect(
    await request(again, "default", { type: "thread.set_mode", thread_id: threadId, mode: "default" }),
  ).toMatchObject({ type: "ack" });
  await stacks.pop()!.close();
  expect(await resumedMode(cwd, sessions, threadId)).toBe("default");
});
