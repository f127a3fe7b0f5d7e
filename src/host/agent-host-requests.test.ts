import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ThreadInfo } from "../protocol/agent.js";
import { HOST_REQUEST_SCHEMAS, type HostRequestType } from "../protocol/agent-requests.js";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "./test-support/host-client.js";
import {
  echoScript,
  manyWords,
  type ScriptedStack,
  startScriptedStack,
} from "./test-support/scripted-stack.js";

let stack: ScriptedStack;
let url: string;
let dir: string;

const saved = (id: string, cwd: string): ThreadInfo => ({
  id,
  title: id,
  cwd,
  model: "",
  createdAt: "2024-01-01T00:00:00.000Z",
  updatedAt: "2024-01-01T00:00:00.000Z",
});

beforeAll(async () => {
  stack = await startScriptedStack({
    script: echoScript(manyWords(400)),
    tokensPerSecond: 400,
    files: { "a.txt": "a\n" },
    host: ({ dir, newThread }) =>
      new AgentHost({
        create: async () => newThread(),
        resume: async () => null,
        list: async () => [saved("thr_here", dir), saved("thr_elsewhere", "/somewhere/else")],
        rename: async () => null,
        remove: async () => false,
      }),
  });
  url = stack.agentUrl;
  dir = stack.dir;
});

afterAll(async () => {
  await stack.close();
});

const answers = (c: HostTestClient, id: string) =>
  c.events.filter((e) => (e.type === "ack" || e.type === "error") && e.request_id === id);

/** Sends `request` with `request_id: id` and resolves with the first ack or error naming it. */
async function request(c: HostTestClient, id: string, request: object): Promise<HostTestEvent> {
  const answer = c.next((e) => (e.type === "ack" || e.type === "error") && e.request_id === id);
  c.send({ ...request, request_id: id });
  return answer;
}

/** Resolves once every turn started so far has completed. */
async function idle(c: HostTestClient): Promise<void> {
  const count = (type: string) => c.events.filter((e) => e.type === type).length;
  while (count("turn.completed") < count("turn.started"))
    await c.next((e) => e.type === "turn.completed", c.events.length);
}

async function startThread(c: HostTestClient): Promise<string> {
  const ack = await request(c, `start-${c.events.length}`, { type: "thread.start" });
  expect(ack.type).toBe("ack");
  return ack.thread_id as string;
}

describe("agent host: request ids", () => {
  test("every request type is answered exactly once, by an ack or an error naming it", async () => {
    const c = await connectHost(url);
    const threadId = await startThread(c);
    const thread = { thread_id: threadId };
    // Typed as every request type: a new one fails to compile here until it is covered.
    const requests: Record<HostRequestType, object> = {
      "thread.start": {},
      "thread.resume": thread,
      "thread.list": {},
      "turn.start": { ...thread, input: "long" },
      "turn.steer": { ...thread, input: "shorter" },
      "turn.queue": { ...thread, input: "next" },
      "turn.draft": { ...thread, input: "typing" },
      "approval.respond": { ...thread, approval_id: "appr_none", approved: true },
      "subagent.cancel": { ...thread, subagent_id: "sub_none" },
      "turn.interrupt": thread,
      "thread.undo": thread,
      "thread.rewind": { ...thread, item_id: "item_none", restore: "both" },
      "thread.compact": { ...thread, focus: "the parser" },
      "patch.accept": { ...thread, item_id: "call_none", path: "a.txt" },
      "patch.reject": { ...thread, item_id: "call_none", path: "a.txt" },
      "thread.rename": { ...thread, title: "Renamed" },
      "thread.set_model": { ...thread, model: "scripted" },
      "thread.set_mode": { ...thread, mode: "default" },
      "workspace.files": { ...thread, query: "a", limit: 3 },
      "thread.diff": thread,
      "thread.review": thread,
      "thread.fork": thread,
      "thread.unsubscribe": thread,
      "thread.delete": thread,
    };
    expect(Object.keys(requests).sort()).toEqual(Object.keys(HOST_REQUEST_SCHEMAS).sort());
    const ids: string[] = [];
    for (const [type, fields] of Object.entries(requests)) {
      const id = `req.${type}:1`;
      ids.push(id);
      const answer = await request(c, id, { type, ...fields });
      const expected = [
        "approval.respond",
        "subagent.cancel",
        "thread.undo",
        // No such message in the thread.
        "thread.rewind",
        "patch.accept",
        "patch.reject",
        // This host's source names no models to switch to, cannot fork, and has no reviewer.
        "thread.set_model",
        "thread.fork",
        "thread.review",
      ].includes(type)
        ? "error"
        : "ack";
      expect({ type, answer: answer.type }).toEqual({ type, answer: expected });
      if (type === "turn.interrupt") await idle(c);
    }
    // A request without an id is answered as before: no ack.
    const list = c.next((e) => e.type === "thread.list");
    c.send({ type: "thread.list" });
    await list;
    await request(c, "sync", { type: "thread.list" });
    for (const id of ids) expect(answers(c, id)).toHaveLength(1);
    expect(c.events.filter((e) => e.type === "ack" && e.request_id === undefined)).toEqual([]);
    // Answers are never stamped.
    for (const answer of c.events.filter((e) => e.type === "ack" || e.type === "error"))
      expect(answer).not.toHaveProperty("seq");
    c.ws.close();
  });

  test("thread.start is acked after thread.started, turn.start after turn.started, with the thread id", async () => {
    const c = await connectHost(url);
    const threadId = await startThread(c);
    const started = c.events.findIndex((e) => e.type === "thread.started");
    const ack = c.events.findIndex((e) => e.type === "ack");
    expect(started).toBeGreaterThanOrEqual(0);
    expect(ack).toBeGreaterThan(started);
    expect(c.events[started]!.thread_id).toBe(threadId);

    const turnAck = await request(c, "t1", { type: "turn.start", thread_id: threadId, input: "hi" });
    const turnStarted = c.events.find((e) => e.type === "turn.started")!;
    expect(turnAck).toEqual({
      type: "ack",
      request_id: "t1",
      thread_id: threadId,
      turn_id: turnStarted.turn_id,
    });
    expect(c.events.findIndex((e) => e.type === "turn.started")).toBeLessThan(c.events.indexOf(turnAck));
    await c.next((e) => e.type === "turn.completed");

    const watcher = await connectHost(url);
    const resumed = await request(watcher, "r1", { type: "thread.resume", thread_id: threadId });
    expect(resumed).toMatchObject({ type: "ack", thread_id: threadId });
    expect(watcher.events.findIndex((e) => e.thread_id === threadId)).toBeLessThan(
      watcher.events.indexOf(resumed),
    );
    c.ws.close();
    watcher.ws.close();
  });

  test("an error carries the id of the request it answers, even for an unknown or invalid request", async () => {
    const c = await connectHost(url);
    const cases: [object, string][] = [
      [{ type: "turn.start", thread_id: "thr_missing", input: "x" }, "not_found"],
      [{ type: "thread.explode" }, "unknown_event_type"],
      [{ type: "turn.start", thread_id: "thr_missing", input: "" }, "invalid_event"],
      [{ type: "thread.list", workspace: "relative/path" }, "invalid_event"],
    ];
    for (const [index, [frame, code]] of cases.entries()) {
      const answer = await request(c, `bad-${index}`, frame);
      expect(answer).toMatchObject({ type: "error", request_id: `bad-${index}`, error: { code } });
    }
    // An id that is not a valid one is refused, and never echoed.
    for (const id of ["", "x".repeat(65), "has space", 42]) {
      const error = c.next((e) => e.type === "error", c.events.length);
      c.send({ type: "thread.list", request_id: id });
      expect(await error).toMatchObject({ error: { code: "invalid_event" } });
      expect(await error).not.toHaveProperty("request_id");
    }
    // Without an id, errors are as before.
    const error = c.next((e) => e.type === "error", c.events.length);
    c.send({ type: "turn.start", thread_id: "thr_missing", input: "x" });
    expect(await error).not.toHaveProperty("request_id");
    c.ws.close();
  });
});

describe("agent host: titles and lists", () => {
  test("the title taken from the first message is announced to every subscriber as thread.renamed", async () => {
    const c = await connectHost(url);
    const threadId = await startThread(c);
    const watcher = await connectHost(url);
    await request(watcher, "w", { type: "thread.resume", thread_id: threadId });
    await request(c, "t", { type: "turn.start", thread_id: threadId, input: "Fix the parser\nplease" });
    for (const client of [c, watcher]) {
      const renamed = await client.next((e) => e.type === "thread.renamed", 0);
      expect(renamed).toMatchObject({ thread_id: threadId, thread: { title: "Fix the parser" } });
      expect(typeof renamed.seq).toBe("number");
    }
    await c.next((e) => e.type === "turn.completed", 0);
    // A second turn keeps the title: no second announcement.
    await request(c, "t2", { type: "turn.start", thread_id: threadId, input: "again" });
    await c.next((e) => e.type === "turn.completed", c.events.length);
    expect(c.events.filter((e) => e.type === "thread.renamed")).toHaveLength(1);
    c.ws.close();
    watcher.ws.close();
  });

  test("a session's first message, title and finished turns reach every client as thread.listed, one entry each", async () => {
    const c = await connectHost(url);
    const other = await connectHost(url);
    await request(other, "l", { type: "thread.list", workspace: "/somewhere/else" });
    const elsewhere = await connectHost(url);
    const threadId = await startThread(c);
    // Started but never used: not listed, and nothing is announced.
    const before = elsewhere.next((e) => e.type === "thread.list");
    await request(elsewhere, "l0", { type: "thread.list" });
    expect(((await before).threads as ThreadInfo[]).map((t) => t.id)).not.toContain(threadId);

    const announced = elsewhere.next((e) => e.type === "thread.listed");
    await request(c, "t", { type: "turn.start", thread_id: threadId, input: "from the terminal" });
    expect((await announced).thread).toMatchObject({ id: threadId, cwd: dir });
    await c.next((e) => e.type === "turn.completed", 0);
    await request(c, "t2", { type: "turn.start", thread_id: threadId, input: "again" });
    await c.next((e) => e.type === "turn.completed", c.events.length);
    // An answer comes after everything sent before it on the same connection.
    for (const client of [other, elsewhere])
      await request(client, "sync", { type: "thread.resume", thread_id: threadId });

    const entries = elsewhere.events
      .filter((e) => e.type === "thread.listed")
      .map((e) => e.thread as ThreadInfo);
    // The first message, the title it gave, and each finished turn.
    expect(entries.length).toBeGreaterThanOrEqual(3);
    for (const entry of entries) expect(entry.id).toBe(threadId);
    const latest = c.events.filter((e) => e.type === "thread.renamed").at(-1)!.thread as ThreadInfo;
    expect(entries.at(-1)).toMatchObject({ title: latest.title });
    expect(entries.at(-1)!.updatedAt >= latest.updatedAt).toBe(true);
    // Only the lists asked for; a client keeping to another workspace hears nothing of this one.
    expect(elsewhere.events.filter((e) => e.type === "thread.list")).toHaveLength(1);
    expect(other.events.filter((e) => e.type === "thread.listed")).toEqual([]);
    expect(other.events.filter((e) => e.type === "thread.list")).toHaveLength(1);
    for (const client of [c, other, elsewhere]) client.ws.close();
  });

  test("thread.list with a workspace lists only its sessions; one never used is not listed", async () => {
    const c = await connectHost(url);
    const used = await startThread(c);
    const unused = await startThread(c);
    await request(c, "t", { type: "turn.start", thread_id: used, input: "hello" });
    await c.next((e) => e.type === "turn.completed", 0);

    const ids = async (fields: object) => {
      const list = c.next((e) => e.type === "thread.list", c.events.length);
      await request(c, `l${c.events.length}`, { type: "thread.list", ...fields });
      return ((await list).threads as ThreadInfo[]).map((t) => t.id);
    };
    const here = await ids({ workspace: dir });
    expect(here).toContain(used);
    expect(here).toContain("thr_here");
    expect(here).not.toContain("thr_elsewhere");
    expect(here).not.toContain(unused);
    expect(await ids({ workspace: "/somewhere/else" })).toEqual(["thr_elsewhere"]);
    // The list after a rename keeps to the workspace this client listed last.
    const renamedList = c.next((e) => e.type === "thread.list", c.events.length);
    await request(c, "rn", { type: "thread.rename", thread_id: used, title: "x" });
    expect(((await renamedList).threads as ThreadInfo[]).map((t) => t.id)).toEqual(["thr_elsewhere"]);
    const all = await ids({});
    expect(all).toEqual(expect.arrayContaining([used, "thr_here", "thr_elsewhere"]));
    expect(all).not.toContain(unused);
    c.ws.close();
  });
});
