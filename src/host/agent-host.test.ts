import { afterAll, beforeAll, describe, expect, test } from "vitest";
import WebSocket from "ws";
import type { ThreadInfo } from "../protocol/agent.js";
import { AgentHost } from "./agent-host.js";
import {
  echoScript,
  manyWords,
  type ScriptedStack,
  startScriptedStack,
} from "./test-support/scripted-stack.js";

type Event = { type: string; seq?: number; thread_id?: string; [key: string]: unknown };

let stack: ScriptedStack;
let url: string;

beforeAll(async () => {
  stack = await startScriptedStack({
    script: echoScript(manyWords(300)),
    tokensPerSecond: 300,
    files: { "a.txt": "a\n" },
    host: ({ dir, newThread }) => {
      const saved: ThreadInfo[] = [
        { id: "thr_saved", title: "old", cwd: dir, model: "", createdAt: "", updatedAt: "" },
      ];
      return new AgentHost({
        create: async () => newThread(),
        resume: async () => null,
        list: async () => saved,
        rename: async () => null,
        remove: async () => false,
      });
    },
  });
  url = stack.agentUrl;
});

afterAll(async () => {
  await stack.close();
});

async function connect() {
  const ws = new WebSocket(url);
  const events: Event[] = [];
  const waiters: { match: (e: Event) => boolean; from: number; resolve: (e: Event) => void }[] = [];
  ws.on("message", (data) => {
    const event = JSON.parse(String(data)) as Event;
    events.push(event);
    for (const waiter of [...waiters]) {
      if (events.length - 1 >= waiter.from && waiter.match(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  });
  await new Promise((resolve) => ws.once("open", resolve));
  return {
    ws,
    events,
    send: (message: object) => ws.send(JSON.stringify(message)),
    next: (match: (e: Event) => boolean, from = events.length) => {
      const found = events.slice(from).find(match);
      return found
        ? Promise.resolve(found)
        : new Promise<Event>((resolve) => waiters.push({ match, from, resolve }));
    },
  };
}

describe("agent host over a real WebSocket", () => {
  test("thread.start, turn.start: items stream and the turn completes, seq strictly increasing", async () => {
    const c = await connect();
    c.send({ type: "thread.start" });
    const started = await c.next((e) => e.type === "thread.started");
    const threadId = started.thread_id!;
    c.send({ type: "turn.start", thread_id: threadId, input: "hello there" });
    const done = await c.next((e) => e.type === "turn.completed");
    expect(done).toMatchObject({ status: "completed", thread_id: threadId });
    const types = c.events.map((e) => e.type);
    expect(types).toEqual(
      expect.arrayContaining(["turn.started", "item.started", "item.delta", "item.completed"]),
    );
    const agentText = c.events
      .filter((e) => e.type === "item.delta")
      .map((e) => e.delta)
      .join("");
    expect(agentText).toBe("echo: hello there");
    const seqs = c.events.filter((e) => e.thread_id === threadId).map((e) => e.seq!);
    expect(seqs).toEqual(seqs.map((_, i) => i));
    c.ws.close();
  });

  test("a client that reconnects resumes from its last seq without gaps or repeats", async () => {
    const a = await connect();
    a.send({ type: "thread.start" });
    const threadId = (await a.next((e) => e.type === "thread.started")).thread_id!;
    a.send({ type: "turn.start", thread_id: threadId, input: "long" });
    await a.next((e) => e.type === "item.delta");
    const lastSeen = a.events.at(-1)!.seq!;
    a.ws.terminate();

    const b = await connect();
    b.send({ type: "thread.resume", thread_id: threadId, after_seq: lastSeen });
    await b.next((e) => e.type === "turn.completed");
    // Unstamped events (`thread.listed`, about the session's list) carry no seq.
    const resumedSeqs = b.events.filter((e) => e.seq !== undefined).map((e) => e.seq!);
    expect(resumedSeqs[0]).toBe(lastSeen + 1);
    expect(resumedSeqs).toEqual(resumedSeqs.map((_, i) => lastSeen + 1 + i));
    // Frames already read when the socket was cut may still be delivered to `a`: the client saw up to lastSeen.
    const seen = a.events.filter((e) => e.seq === undefined || e.seq <= lastSeen);
    const text = [...seen, ...b.events]
      .filter((e) => e.type === "item.delta")
      .map((e) => e.delta)
      .join("");
    expect(text).toBe(manyWords(300));
    b.ws.close();
  });

  test("turn.interrupt ends a streaming turn as interrupted; turn.steer redirects it", async () => {
    const c = await connect();
    c.send({ type: "thread.start" });
    const threadId = (await c.next((e) => e.type === "thread.started")).thread_id!;
    c.send({ type: "turn.start", thread_id: threadId, input: "long" });
    await c.next((e) => e.type === "item.delta");
    c.send({ type: "turn.interrupt", thread_id: threadId });
    expect(await c.next((e) => e.type === "turn.completed")).toMatchObject({ status: "interrupted" });

    const mark = c.events.length;
    c.send({ type: "turn.start", thread_id: threadId, input: "long" });
    await c.next((e) => e.type === "item.delta", mark);
    c.send({ type: "turn.steer", thread_id: threadId, input: "shorter" });
    const done = await c.next((e) => e.type === "turn.completed", mark);
    expect(done).toMatchObject({ status: "completed" });
    const lastMessage = c.events
      .filter((e) => e.type === "item.completed" && (e.item as { type: string }).type === "agent_message")
      .at(-1);
    expect(lastMessage?.item).toMatchObject({ text: "echo: shorter" });
    c.ws.close();
  });

  test("approvals round-trip: the command waits for approval.respond", async () => {
    const c = await connect();
    c.send({ type: "thread.start" });
    const threadId = (await c.next((e) => e.type === "thread.started")).thread_id!;
    c.send({ type: "turn.start", thread_id: threadId, input: "run true please" });
    const request = await c.next((e) => e.type === "approval.requested");
    expect(request).toMatchObject({ command: "true", kind: "shell" });
    c.send({
      type: "approval.respond",
      thread_id: threadId,
      approval_id: request.approval_id,
      approved: true,
    });
    await c.next((e) => e.type === "turn.completed");
    const call = c.events.find(
      (e) => e.type === "item.completed" && (e.item as { type: string }).type === "tool_call",
    );
    expect(call?.item).toMatchObject({ name: "shell", status: "completed" });
    c.ws.close();
  });

  test("turn.interrupt denies a pending approval: clients see approval.resolved, a late answer is not_found", async () => {
    const c = await connect();
    c.send({ type: "thread.start" });
    const threadId = (await c.next((e) => e.type === "thread.started")).thread_id!;
    c.send({ type: "turn.start", thread_id: threadId, input: "run true please" });
    const request = await c.next((e) => e.type === "approval.requested");
    const mark = c.events.length;
    c.send({ type: "turn.interrupt", thread_id: threadId });
    expect(await c.next((e) => e.type === "approval.resolved", mark)).toMatchObject({
      approval_id: request.approval_id,
      approved: false,
    });
    expect(await c.next((e) => e.type === "turn.completed", mark)).toMatchObject({ status: "interrupted" });

    const error = c.next((e) => e.type === "error");
    c.send({
      type: "approval.respond",
      thread_id: threadId,
      approval_id: request.approval_id,
      approved: true,
    });
    expect(await error).toMatchObject({ error: { code: "not_found", param: "approval_id" } });
    const call = c.events.find(
      (e) => e.type === "item.completed" && (e.item as { type: string }).type === "tool_call",
    );
    expect(call?.item).toMatchObject({ name: "shell", status: "failed" });
    c.ws.close();
  });

  test("bad messages get an error and the connection stays usable; thread.list lists threads", async () => {
    const c = await connect();
    const cases: [string, string][] = [
      ["{nope", "invalid_json"],
      [JSON.stringify({ type: "thread.explode" }), "unknown_event_type"],
      [JSON.stringify({ type: "turn.start", thread_id: "thr_missing", input: "x" }), "not_found"],
      [JSON.stringify({ type: "turn.start", thread_id: "x", input: "" }), "invalid_event"],
      [JSON.stringify({ type: "thread.resume", thread_id: "thr_unknown" }), "not_found"],
    ];
    for (const [frame, code] of cases) {
      const error = c.next((e) => e.type === "error");
      c.ws.send(frame);
      expect(await error).toMatchObject({ error: { code } });
    }
    c.send({ type: "thread.list" });
    const list = await c.next((e) => e.type === "thread.list");
    expect((list.threads as ThreadInfo[]).map((t) => t.id)).toContain("thr_saved");
    c.ws.close();
  });
});
