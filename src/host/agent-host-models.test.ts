import { afterAll, beforeAll, expect, test } from "vitest";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "./test-support/host-client.js";
import {
  echoScript,
  manyWords,
  type ScriptedStack,
  startScriptedStack,
} from "./test-support/scripted-stack.js";

let stack: ScriptedStack;

beforeAll(async () => {
  stack = await startScriptedStack({
    script: echoScript(manyWords(2000)),
    tokensPerSecond: 400,
    // With one model a server answers any name with it; with two, a name it lacks fails.
    extraModels: ["other"],
    host: ({ newThread }) =>
      new AgentHost({
        create: async () => newThread({ model: "scripted" }),
        resume: async () => null,
        list: async () => [],
        rename: async () => null,
        remove: async () => false,
        // "absent" is offered, but the server has no such model: a turn there fails.
        models: () => ["scripted", "absent"],
      }),
  });
});

afterAll(async () => {
  await stack.close();
});

async function request(c: HostTestClient, id: string, request: object): Promise<HostTestEvent> {
  const answer = c.next((e) => (e.type === "ack" || e.type === "error") && e.request_id === id);
  c.send({ ...request, request_id: id });
  return answer;
}

async function startThread(c: HostTestClient): Promise<string> {
  const ack = await request(c, "start", { type: "thread.start" });
  return ack.thread_id as string;
}

test("thread.set_model moves the thread's next turns to the model, announced to every subscriber", async () => {
  const c = await connectHost(stack.agentUrl);
  const threadId = await startThread(c);
  const watcher = await connectHost(stack.agentUrl);
  await request(watcher, "w", { type: "thread.resume", thread_id: threadId });

  const ack = await request(c, "m", { type: "thread.set_model", thread_id: threadId, model: "absent" });
  expect(ack).toMatchObject({ type: "ack", thread_id: threadId });
  for (const client of [c, watcher]) {
    const renamed = await client.next((e) => e.type === "thread.renamed", 0);
    expect(renamed).toMatchObject({ thread_id: threadId, thread: { model: "absent" } });
    expect(typeof renamed.seq).toBe("number");
  }
  // The next turn asks the server for that model, which it does not have.
  await request(c, "t", { type: "turn.start", thread_id: threadId, input: "hi" });
  const done = await c.next((e) => e.type === "turn.completed");
  expect(done).toMatchObject({ status: "failed" });
  expect(JSON.stringify(done.error)).toContain("absent");

  // And back: the turn after runs on the scripted model again.
  await request(c, "m2", { type: "thread.set_model", thread_id: threadId, model: "scripted" });
  await request(c, "t2", { type: "turn.start", thread_id: threadId, input: "again" });
  expect(await c.next((e) => e.type === "turn.completed", c.events.length)).toMatchObject({
    status: "completed",
  });
  c.ws.close();
  watcher.ws.close();
});

test("thread.set_model refuses a model the host does not offer, a running turn, and a malformed name", async () => {
  const c = await connectHost(stack.agentUrl);
  const threadId = await startThread(c);
  const unknown = await request(c, "u", { type: "thread.set_model", thread_id: threadId, model: "huge" });
  expect(unknown).toMatchObject({
    type: "error",
    error: {
      code: "invalid_request",
      param: "model",
      message: "Unknown model 'huge'. Available: scripted, absent.",
    },
  });

  await request(c, "t", { type: "turn.start", thread_id: threadId, input: "long" });
  const busy = await request(c, "b", { type: "thread.set_model", thread_id: threadId, model: "absent" });
  expect(busy).toMatchObject({ type: "error", error: { code: "response_in_progress" } });
  await request(c, "i", { type: "turn.interrupt", thread_id: threadId });

  for (const model of ["", "x".repeat(129), "has space", 42]) {
    const bad = await request(c, `bad-${String(model).length}`, {
      type: "thread.set_model",
      thread_id: threadId,
      model,
    });
    expect(bad).toMatchObject({ type: "error", error: { code: "invalid_event" } });
  }
  // Nothing was switched: no announcement of another model.
  expect(
    c.events.filter(
      (e) => e.type === "thread.renamed" && (e.thread as { model: string }).model !== "scripted",
    ),
  ).toEqual([]);
  c.ws.close();
});
