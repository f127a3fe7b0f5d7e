import { EventEmitter } from "node:events";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { WebSocket } from "ws";
import type { AgentThread } from "../agent/agent-thread.js";
import type { AgentThreadOptions } from "../agent/agent-thread-options.js";
import type { HostEvent, ThreadInfo, ThreadItem } from "../protocol/agent.js";
import { AgentHost, type AgentHostOptions } from "./agent-host.js";
import type { HostThreadSource } from "./host-thread-source.js";
import {
  echoScript,
  manyWords,
  type ScriptedStack,
  startScriptedStack,
} from "./test-support/scripted-stack.js";

let stack: ScriptedStack;

beforeAll(async () => {
  stack = await startScriptedStack({ script: echoScript(manyWords(200)), tokensPerSecond: 2000 });
});

afterAll(async () => {
  await stack.close();
});

type Stamped = Extract<HostEvent, { seq: number }>;

/** Stands in for a client's WebSocket: the host only sends to it and listens to it. */
class FakeSocket extends EventEmitter {
  readonly OPEN = 1;
  readyState = 1;
  readonly events: HostEvent[] = [];
  private waiters: { match: (e: HostEvent) => boolean; resolve: (e: HostEvent) => void }[] = [];

  send(line: string): void {
    const event = JSON.parse(line) as HostEvent;
    this.events.push(event);
    for (const waiter of [...this.waiters]) {
      if (waiter.match(event)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  }

  request(message: object): void {
    this.emit("message", Buffer.from(JSON.stringify(message)), false);
  }

  /** The next event matching `match` from now on. */
  next<T extends HostEvent>(match: (e: HostEvent) => boolean): Promise<T> {
    return new Promise((resolve) => this.waiters.push({ match, resolve: resolve as (e: HostEvent) => void }));
  }

  close(): void {
    this.readyState = 3;
    this.emit("close");
  }
}

/** Threads on the scripted server; a released thread is resumable from the items it had. */
function testSource(threadOptions: Partial<AgentThreadOptions> = {}) {
  const saved = new Map<string, { thread: ThreadInfo; items: ThreadItem[] }>();
  const live = new Map<string, AgentThread>();
  const released: string[] = [];
  const make = (resume?: { thread: ThreadInfo; items: ThreadItem[] }) => {
    const thread = stack.newThread({ ...threadOptions, ...(resume ? { resume } : {}) });
    live.set(thread.info.id, thread);
    return thread;
  };
  const source: HostThreadSource = {
    create: async () => make(),
    resume: async (id) => {
      const entry = saved.get(id);
      return entry ? make({ thread: { ...entry.thread }, items: [...entry.items] }) : null;
    },
    list: async () => [],
    rename: async () => null,
    remove: async () => false,
    release: (id) => {
      const thread = live.get(id)!;
      saved.set(id, { thread: { ...thread.info }, items: [...thread.history] });
      live.delete(id);
      released.push(id);
    },
  };
  return { source, released };
}

function setup(options: AgentHostOptions = {}, threadOptions: Partial<AgentThreadOptions> = {}) {
  const { source, released } = testSource(threadOptions);
  const host = new AgentHost(source, options);
  const connect = () => {
    const socket = new FakeSocket();
    host.accept(socket as unknown as WebSocket);
    return socket;
  };
  return { host, released, connect };
}

async function startThread(socket: FakeSocket): Promise<string> {
  const started = socket.next<Stamped>((e) => e.type === "thread.started");
  socket.request({ type: "thread.start" });
  return (await started).thread_id;
}

async function runTurn(socket: FakeSocket, threadId: string, input: string): Promise<Stamped> {
  const done = socket.next<Stamped>((e) => e.type === "turn.completed" && e.thread_id === threadId);
  socket.request({ type: "turn.start", thread_id: threadId, input });
  return done;
}

const stamped = (socket: FakeSocket) => socket.events.filter((e): e is Stamped => "seq" in e);

describe("restart-safe resume: epochs and history resets", () => {
  test("every stamped event carries the host's epoch; the same epoch resumes exactly where it was", async () => {
    const { host, connect } = setup();
    const a = connect();
    const threadId = await startThread(a);
    await runTurn(a, threadId, "hello");
    expect(stamped(a).every((e) => e.epoch === host.epoch)).toBe(true);
    expect(host.epoch).toMatch(/^ep_[0-9a-f]{16}$/);

    const b = connect();
    b.request({ type: "thread.resume", thread_id: threadId, after_seq: 2, epoch: host.epoch });
    const done = await runTurn(b, threadId, "again");
    const seqs = stamped(b).map((e) => e.seq);
    expect(seqs[0]).toBe(3);
    expect(seqs).toEqual(seqs.map((_, i) => 3 + i));
    expect(done.seq).toBe(seqs.at(-1));
    expect(b.events.some((e) => e.type === "thread.history")).toBe(false);
    host.dispose();
  });

  test("resuming with another epoch gets every item as a thread.history reset, then live events", async () => {
    const { host, connect } = setup();
    const a = connect();
    const threadId = await startThread(a);
    const first = await runTurn(a, threadId, "hello");

    const b = connect();
    b.request({ type: "thread.resume", thread_id: threadId, after_seq: 40, epoch: "ep_0000000000000000" });
    const [reset] = stamped(b);
    expect(reset).toMatchObject({
      type: "thread.history",
      reset: true,
      seq: first.seq,
      epoch: host.epoch,
      thread: { id: threadId },
    });
    const items = (reset as Extract<Stamped, { type: "thread.history" }>).items;
    expect(items.map((item) => [item.type, "text" in item ? item.text : ""])).toEqual([
      ["user_message", "hello"],
      ["agent_message", "echo: hello"],
    ]);
    await runTurn(b, threadId, "more");
    const live = stamped(b).slice(1);
    expect(live[0]).toMatchObject({ type: "turn.started", seq: first.seq + 1 });
    host.dispose();
  });

  test("after_seq beyond the host's sequence (a restarted host, no epoch sent) is a reset too", async () => {
    const { host, connect } = setup();
    const a = connect();
    const threadId = await startThread(a);
    await runTurn(a, threadId, "hello");
    const b = connect();
    b.request({ type: "thread.resume", thread_id: threadId, after_seq: 9999 });
    expect(b.events[0]).toMatchObject({ type: "thread.history", reset: true });
    host.dispose();
  });

  test("resuming from before the kept replay window gets the history, not an error", async () => {
    const { host, connect } = setup({ replayBytes: 4096 });
    const a = connect();
    const threadId = await startThread(a);
    await runTurn(a, threadId, "long");
    const b = connect();
    b.request({ type: "thread.resume", thread_id: threadId, after_seq: 0, epoch: host.epoch });
    expect(b.events.some((e) => e.type === "error")).toBe(false);
    expect(b.events).toHaveLength(1);
    const reset = b.events[0] as Extract<Stamped, { type: "thread.history" }>;
    expect(reset).toMatchObject({ type: "thread.history", reset: true });
    expect(reset.items.at(-1)).toMatchObject({ type: "agent_message", text: manyWords(200) });
    // A client within the window still continues: the newest events are kept.
    const c = connect();
    const last = stamped(a).at(-1)!.seq;
    c.request({ type: "thread.resume", thread_id: threadId, after_seq: last - 2, epoch: host.epoch });
    expect(stamped(c).map((e) => e.seq)).toEqual([last - 1, last]);
    host.dispose();
  });
});

describe("hosted threads: idle eviction and a cap", () => {
  test("an idle thread is let go after idleMs, not before, and not while watched or busy", async () => {
    const { host, released, connect } = setup({ idleMs: 60_000 });
    const a = connect();
    const threadId = await startThread(a);
    const asked = a.next<Stamped>((e) => e.type === "approval.requested");
    a.request({ type: "turn.start", thread_id: threadId, input: "run true" });
    const approval = (await asked) as Extract<Stamped, { type: "approval.requested" }>;
    host.evictIdle(Date.now() + 120_000);
    expect(released).toEqual([]); // watched
    a.close();
    host.evictIdle(Date.now() + 120_000);
    expect(released).toEqual([]); // busy: a turn waits for approval
    const b = connect();
    b.request({ type: "thread.resume", thread_id: threadId, after_seq: approval.seq, epoch: host.epoch });
    const done = b.next<Stamped>((e) => e.type === "turn.completed");
    b.request({
      type: "approval.respond",
      thread_id: threadId,
      approval_id: approval.approval_id,
      approved: true,
    });
    const completed = await done;
    b.close();
    host.evictIdle(Date.now() + 1_000);
    expect(released).toEqual([]); // idle, but not for long enough
    host.evictIdle(Date.now() + 60_000);
    expect(released).toEqual([threadId]);
    expect(host.size).toBe(0);

    // Still resumable; the client's old seq is beyond the new host thread's, so it gets a reset.
    const c = connect();
    const resumed = c.next((e) => e.type === "thread.history");
    c.request({ type: "thread.resume", thread_id: threadId, after_seq: completed.seq, epoch: host.epoch });
    expect(await resumed).toMatchObject({ reset: true });
    expect((c.events[0] as Extract<Stamped, { type: "thread.history" }>).items.length).toBeGreaterThan(2);
    host.dispose();
  });

  test("at the thread cap an idle thread makes room; with none idle, a clear error", async () => {
    const { host, released, connect } = setup({ maxThreads: 2 });
    const a = connect();
    const b = connect();
    const first = await startThread(a);
    await startThread(b);
    const c = connect();
    const refused = c.next((e) => e.type === "error");
    c.request({ type: "thread.start" });
    expect(await refused).toMatchObject({ error: { code: "limit_reached" } });
    expect(host.size).toBe(2);
    a.close();
    const third = await startThread(c);
    expect(released).toEqual([first]);
    expect(host.size).toBe(2);
    expect(third).not.toBe(first);
    host.dispose();
  });
});

describe("queued turns and inputs at the edge", () => {
  test("turn.queue past the cap answers limit_reached; what was queued runs", async () => {
    const { host, connect } = setup({}, { maxQueuedTurns: 1 });
    const a = connect();
    const threadId = await startThread(a);
    const asked = a.next<Stamped>((e) => e.type === "approval.requested");
    a.request({ type: "turn.start", thread_id: threadId, input: "run true" });
    const approval = (await asked) as Extract<Stamped, { type: "approval.requested" }>;
    const queued = a.next((e) => e.type === "turn.queued");
    a.request({ type: "turn.queue", thread_id: threadId, input: "next" });
    await queued;
    const refused = a.next((e) => e.type === "error");
    a.request({ type: "turn.queue", thread_id: threadId, input: "one too many" });
    expect(await refused).toMatchObject({ error: { code: "limit_reached" } });
    const ran = a.next((e) => e.type === "turn.started" && e.input === "next");
    a.request({
      type: "approval.respond",
      thread_id: threadId,
      approval_id: approval.approval_id,
      approved: true,
    });
    await ran;
    host.dispose();
  });

  test("a turn input over 1 MiB of UTF-8 is refused as invalid_event", async () => {
    const { host, connect } = setup();
    const a = connect();
    const threadId = await startThread(a);
    const refused = a.next((e) => e.type === "error");
    a.request({ type: "turn.start", thread_id: threadId, input: "é".repeat(512 * 1024 + 1) });
    expect(await refused).toMatchObject({ error: { code: "invalid_event" } });
    expect(a.events.some((e) => e.type === "turn.started")).toBe(false);
    host.dispose();
  });
});
