import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AgentThread } from "../agent/agent-thread.js";
import type { Script } from "../engine/scripted/scripted-engine.js";
import type { ThreadInfo } from "../protocol/agent.js";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "./test-support/host-client.js";
import { manyWords, type ScriptedStack, startScriptedStack } from "./test-support/scripted-stack.js";

// Ids on the wire: what each face needs to bind its own requests to the turns and calls they made,
// instead of guessing from the order events come in. And the lifecycles around them.

const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "user" && last.content === "run two")
    return {
      toolCalls: [
        { name: "shell", arguments: JSON.stringify({ command: "echo one" }) },
        { name: "shell", arguments: JSON.stringify({ command: "echo two" }) },
      ],
    };
  if (last?.role === "user" && last.content === "long") return { text: manyWords(400) };
  return { text: `echo: ${last?.role === "user" ? last.content : "done"}` };
};

let stack: ScriptedStack;
let url: string;
/** Saved sessions the source resumes, and how many threads it made for each. */
const saved = new Map<string, ThreadInfo>();
const resumed = new Map<string, number>();
/** Holds each resume until the test lets it finish (to make two resumes overlap). */
let resumeGate: Promise<void> = Promise.resolve();

beforeAll(async () => {
  stack = await startScriptedStack({
    script,
    tokensPerSecond: 400,
    host: ({ dir, newThread }) => {
      const info = (id: string): ThreadInfo => ({
        id,
        title: id,
        cwd: dir,
        model: "",
        createdAt: "2025-01-01T00:00:00.000Z",
        updatedAt: "2025-01-01T00:00:00.000Z",
      });
      for (const id of ["thr_raced", "thr_a", "thr_b"]) saved.set(id, info(id));
      return new AgentHost(
        {
          create: async () => newThread(),
          resume: async (id): Promise<AgentThread | null> => {
            const thread = saved.get(id);
            if (!thread) return null;
            resumed.set(id, (resumed.get(id) ?? 0) + 1);
            await resumeGate;
            return newThread({
              resume: { thread, items: [{ type: "user_message", id: "item_u", text: "hi" }] },
            });
          },
          list: async () => [...saved.values()],
          rename: async () => null,
          remove: async () => false,
        },
        { maxThreads: 2 },
      );
    },
  });
  url = stack.agentUrl;
});

afterAll(async () => {
  await stack.close();
});

/** Sends `message` with `request_id: id`; resolves with the ack or error naming it. */
async function request(c: HostTestClient, id: string, message: object): Promise<HostTestEvent> {
  const answer = c.next((e) => (e.type === "ack" || e.type === "error") && e.request_id === id);
  c.send({ ...message, request_id: id });
  return answer;
}

/** Stops following `threadIds` (so the host may let them go: room for the next test) and disconnects. */
async function leave(c: HostTestClient, ...threadIds: string[]): Promise<void> {
  for (const threadId of threadIds)
    await request(c, `leave-${threadId}`, { type: "thread.unsubscribe", thread_id: threadId });
  c.ws.close();
}

async function startThread(c: HostTestClient): Promise<string> {
  return (await request(c, `start-${c.events.length}`, { type: "thread.start" })).thread_id as string;
}

describe("turn and call ids on the wire", () => {
  test("turn.start was acknowledged without a turn id: its ack names the turn, right after turn.started", async () => {
    const c = await connectHost(url);
    const threadId = await startThread(c);
    const ack = await request(c, "t", { type: "turn.start", thread_id: threadId, input: "hello" });
    const started = c.events.find((e) => e.type === "turn.started")!;
    expect(ack).toEqual({ type: "ack", request_id: "t", thread_id: threadId, turn_id: started.turn_id });
    // Nothing of the turn comes between: a face knows the turn is its own before any of its items.
    expect(c.events.indexOf(ack)).toBe(c.events.indexOf(started) + 1);
    await c.next((e) => e.type === "turn.completed", 0);
    await leave(c, threadId);
  });

  test("turn.queued carried no turn id: the queued turn's id is in turn.queued, the ack and its turn.started", async () => {
    const c = await connectHost(url);
    const threadId = await startThread(c);
    const first = await request(c, "t", { type: "turn.start", thread_id: threadId, input: "long" });
    const queued = await request(c, "q", { type: "turn.queue", thread_id: threadId, input: "after" });
    expect(queued.turn_id).toMatch(/^turn_/);
    expect(queued.turn_id).not.toBe(first.turn_id);
    expect(c.events.find((e) => e.type === "turn.queued")).toMatchObject({
      turn_id: queued.turn_id,
      input: "after",
    });
    const next = await c.next((e) => e.type === "turn.started" && e.turn_id !== first.turn_id, 0);
    expect(next).toMatchObject({ turn_id: queued.turn_id, input: "after" });
    await c.next((e) => e.type === "turn.completed" && e.turn_id === queued.turn_id, 0);
    // Queued while idle, a turn starts at once, and the ack still names it.
    const idle = await request(c, "q2", { type: "turn.queue", thread_id: threadId, input: "now" });
    const started = c.events.filter((e) => e.type === "turn.started").at(-1)!;
    expect(idle.turn_id).toBe(started.turn_id);
    await c.next((e) => e.type === "turn.completed" && e.turn_id === idle.turn_id, 0);
    await leave(c, threadId);
  });

  test("approval events carried no call_id: with two shell calls in one response, each names its own call", async () => {
    const c = await connectHost(url);
    const threadId = await startThread(c);
    const ack = await request(c, "t", { type: "turn.start", thread_id: threadId, input: "run two" });
    const calls: string[] = [];
    for (const command of ["echo one", "echo two"]) {
      const asked = await c.next((e) => e.type === "approval.requested" && e.command === command, 0);
      // The call that asks is the one whose arguments hold the command.
      const call = c.events.find(
        (e) => e.type === "item.started" && (e.item as { type: string; id: string }).id === asked.call_id,
      );
      expect(call).toBeDefined();
      expect(asked.turn_id).toBe(ack.turn_id);
      calls.push(asked.call_id as string);
      const resolved = c.next((e) => e.type === "approval.resolved" && e.approval_id === asked.approval_id);
      await request(c, `deny-${calls.length}`, {
        type: "approval.respond",
        thread_id: threadId,
        approval_id: asked.approval_id,
        approved: false,
      });
      expect(await resolved).toMatchObject({ turn_id: ack.turn_id, call_id: asked.call_id, approved: false });
    }
    const callItems = c.events
      .filter((e) => e.type === "item.completed" && (e.item as { type: string }).type === "tool_call")
      .map((e) => e.item as { id: string; arguments: string });
    expect(calls).toEqual(callItems.map((item) => item.id));
    expect(new Set(calls).size).toBe(2);
    expect(JSON.parse(callItems[0]!.arguments)).toEqual({ command: "echo one" });
    await c.next((e) => e.type === "turn.completed", 0);
    await leave(c, threadId);
  });

  test("host errors dropped their status: each error carries the HTTP status of its code", async () => {
    const c = await connectHost(url);
    const threadId = await startThread(c);
    expect(
      await request(c, "nf", { type: "turn.start", thread_id: "thr_missing", input: "x" }),
    ).toMatchObject({
      type: "error",
      status: 404,
      error: { code: "not_found" },
    });
    expect(await request(c, "bad", { type: "turn.start", thread_id: threadId, input: "" })).toMatchObject({
      status: 400,
      error: { code: "invalid_event" },
    });
    await request(c, "t", { type: "turn.start", thread_id: threadId, input: "long" });
    expect(
      await request(c, "busy", { type: "turn.start", thread_id: threadId, input: "again" }),
    ).toMatchObject({ status: 409, error: { code: "response_in_progress" } });
    await request(c, "i", { type: "turn.interrupt", thread_id: threadId });
    await c.next((e) => e.type === "turn.completed", 0);
    await leave(c, threadId);
  });
});

describe("lifecycles at the seams", () => {
  test("two concurrent thread.resume of one id made two threads: the second joins the first's load", async () => {
    const a = await connectHost(url);
    const b = await connectHost(url);
    let open!: () => void;
    resumeGate = new Promise((resolve) => {
      open = resolve;
    });
    const first = request(a, "ra", { type: "thread.resume", thread_id: "thr_raced" });
    const second = request(b, "rb", { type: "thread.resume", thread_id: "thr_raced" });
    // Both requests are in: the first waits on its load, the second must not start another.
    await request(b, "sync", { type: "thread.list" });
    open();
    expect((await first).type).toBe("ack");
    expect((await second).type).toBe("ack");
    expect(resumed.get("thr_raced")).toBe(1);
    // Both clients follow the one thread: a turn either starts reaches both.
    await request(a, "t", { type: "turn.start", thread_id: "thr_raced", input: "hello" });
    for (const client of [a, b])
      await client.next((e) => e.type === "turn.completed" && e.thread_id === "thr_raced", 0);
    resumeGate = Promise.resolve();
    await leave(a, "thr_raced");
    await leave(b, "thr_raced");
  });

  test("thread.unsubscribe: no more events for that client, and the idle thread makes room at the cap", async () => {
    const c = await connectHost(url);
    const other = await connectHost(url);
    // Room for two (maxThreads 2): both followed, so a third cannot open.
    await request(c, "a", { type: "thread.resume", thread_id: "thr_a" });
    await request(c, "b", { type: "thread.resume", thread_id: "thr_b" });
    const refused = await request(c, "full", { type: "thread.start" });
    expect(refused).toMatchObject({ type: "error", status: 429, error: { code: "limit_reached" } });

    expect(await request(c, "u", { type: "thread.unsubscribe", thread_id: "thr_a" })).toMatchObject({
      type: "ack",
      thread_id: "thr_a",
    });
    // Unknown or unfollowed threads: acked, nothing to stop.
    expect((await request(c, "u2", { type: "thread.unsubscribe", thread_id: "thr_none" })).type).toBe("ack");
    // Another client's turn on thr_b still reaches c; after the unsubscribe thr_a's does not.
    await request(other, "rb", { type: "thread.resume", thread_id: "thr_b" });
    const mark = c.events.length;
    await request(other, "tb", { type: "turn.start", thread_id: "thr_b", input: "hello" });
    await c.next((e) => e.type === "turn.completed" && e.thread_id === "thr_b", mark);
    await request(other, "unb", { type: "thread.unsubscribe", thread_id: "thr_b" });
    await request(c, "unb", { type: "thread.unsubscribe", thread_id: "thr_b" });
    // Both idle now: a new thread takes the place of the least recently active one.
    const started = await request(c, "new", { type: "thread.start" });
    expect(started.type).toBe("ack");
    expect(c.events.slice(mark).filter((e) => e.thread_id === "thr_a")).toEqual([]);
    c.ws.close();
    other.ws.close();
  });
});
