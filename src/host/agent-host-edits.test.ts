import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { AgentThread } from "../agent/agent-thread.js";
import { Workspace } from "../agent/workspace.js";
import { ResponsesClient } from "../client/responses-client.js";
import { type Script, ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import type { ThreadInfo, ThreadItem } from "../protocol/agent.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";
import { AgentHost } from "./agent-host.js";
import type { HostThreadSource } from "./host-thread-source.js";
import { connectHost, type HostTestEvent } from "./test-support/host-client.js";

const patch = (lines: string[]) =>
  JSON.stringify({ patch: ["*** Begin Patch", ...lines, "*** End Patch"].join("\n") });

/** "edit": changes a.txt and adds b.txt; "again": changes a.txt once more; "long": a long answer. */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role !== "user") return { text: "done" };
  if (last.content === "edit") {
    const edit = patch(["*** Update File: a.txt", "@@", "-a", "+A", "*** Add File: b.txt", "+b"]);
    return { toolCalls: [{ name: "apply_patch", arguments: edit }] };
  }
  if (last.content === "again") {
    return {
      toolCalls: [{ name: "apply_patch", arguments: patch(["*** Update File: a.txt", "@@", "-A", "+AA"]) }],
    };
  }
  if (last.content === "long") return { text: Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ") };
  return { text: `echo: ${last.content}` };
};

let server: SparkServer;
let client: ResponsesClient;
let url: string;
let dir: string;
const saved = new Map<string, { thread: ThreadInfo; items: ThreadItem[] }>();

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "spark-host-edits-"));
  await writeFile(path.join(dir, "a.txt"), "a\n");
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const models = new ModelRegistry();
  models.add("scripted", new ScriptedEngine({ script, tokensPerSecond: 400 }));
  const info = (id: string, title: string): ThreadInfo => ({
    id,
    title,
    cwd: dir,
    model: "",
    createdAt: "2025-01-01T00:00:00.000Z",
    updatedAt: "2025-01-01T00:00:00.000Z",
  });
  saved.set("thr_saved", {
    thread: info("thr_saved", "old one"),
    items: [
      { type: "user_message", id: "item_u", text: "hi" },
      { type: "agent_message", id: "item_a", text: "hello" },
    ],
  });
  const newThread = (resume?: { thread: ThreadInfo; items: ThreadItem[] }) => {
    const thread = new AgentThread({
      client,
      workspace: new Workspace(dir),
      instructions: "You are Spark.",
      ...(resume ? { resume } : {}),
    });
    saved.set(thread.info.id, { thread: thread.info, items: [] });
    return thread;
  };
  const source: HostThreadSource = {
    create: async () => newThread(),
    resume: async (id) => {
      const session = saved.get(id);
      return session ? newThread(session) : null;
    },
    list: async () => [...saved.values()].map((s) => s.thread),
    rename: async (id, title) => {
      const session = saved.get(id);
      if (!session) return null;
      session.thread = { ...session.thread, title };
      return session.thread;
    },
    remove: async (id) => saved.delete(id),
  };
  const host = new AgentHost(source);
  server = await SparkServer.start({ models, sockets: { "/v1/agent": (socket) => host.accept(socket) } });
  client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  url = `${server.url.replace("http", "ws")}/v1/agent`;
});

afterAll(async () => {
  await client.close();
  await server.close();
});

const read = (name: string) => readFile(path.join(dir, name), "utf8");
const exists = (name: string) =>
  stat(path.join(dir, name)).then(
    () => true,
    () => false,
  );

async function startedThread() {
  const c = await connectHost(url);
  c.send({ type: "thread.start" });
  const threadId = (await c.next((e) => e.type === "thread.started")).thread_id!;
  return { c, threadId };
}

/** Runs a turn to its end; returns the tool call item that applied a patch in it. */
async function patchTurn(c: Awaited<ReturnType<typeof connectHost>>, threadId: string, input: string) {
  const mark = c.events.length;
  c.send({ type: "turn.start", thread_id: threadId, input });
  await c.next((e) => e.type === "turn.completed", mark);
  const call = c.events
    .slice(mark)
    .find((e) => e.type === "item.completed" && (e.item as ThreadItem).type === "tool_call");
  return call?.item as Extract<ThreadItem, { type: "tool_call" }>;
}

const errorAfter = (c: Awaited<ReturnType<typeof connectHost>>) => c.next((e) => e.type === "error");

describe("agent host: reviewing edits", () => {
  test("accept keeps a file, reject restores it, a file changed since is refused, undo reverts", async () => {
    const { c, threadId } = await startedThread();
    const call = await patchTurn(c, threadId, "edit");
    expect(call).toMatchObject({ status: "completed", display: { kind: "diff" } });
    expect(await read("a.txt")).toBe("A\n");
    expect(await read("b.txt")).toBe("b\n");

    c.send({ type: "patch.accept", thread_id: threadId, item_id: call.id, path: "a.txt" });
    expect(await c.next((e) => e.type === "patch.resolved")).toMatchObject({
      item_id: call.id,
      path: "a.txt",
      resolution: "accepted",
    });
    let error = errorAfter(c);
    c.send({ type: "patch.reject", thread_id: threadId, item_id: call.id, path: "a.txt" });
    expect((await error).error).toMatchObject({ code: "invalid_request", param: "path" });
    expect(await read("a.txt")).toBe("A\n");

    c.send({ type: "patch.reject", thread_id: threadId, item_id: call.id, path: "b.txt" });
    expect(await c.next((e) => e.type === "patch.resolved" && e.path === "b.txt")).toMatchObject({
      resolution: "rejected",
    });
    expect(await exists("b.txt")).toBe(false);

    const second = await patchTurn(c, threadId, "again");
    expect(await read("a.txt")).toBe("AA\n");
    await writeFile(path.join(dir, "a.txt"), "edited by hand\n");
    error = errorAfter(c);
    c.send({ type: "patch.reject", thread_id: threadId, item_id: second.id, path: "a.txt" });
    expect((await error).error).toMatchObject({ message: expect.stringContaining("changed since") });
    expect(await read("a.txt")).toBe("edited by hand\n");

    // Undo never overwrites the person's edit: refused (409), nothing changed, still undoable.
    error = errorAfter(c);
    c.send({ type: "thread.undo", thread_id: threadId });
    expect((await error).error).toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("a.txt changed since"),
    });
    expect(await error).toMatchObject({ status: 409 });
    expect(await read("a.txt")).toBe("edited by hand\n");
    // A rewind refusal lacked the status docs/PROTOCOL.md gives it: refused the same way, 409.
    const again = c.events
      .map((e) => e.item as ThreadItem | undefined)
      .find((item) => item?.type === "user_message" && item.text === "again")!;
    error = errorAfter(c);
    c.send({ type: "thread.rewind", thread_id: threadId, item_id: again.id, restore: "code" });
    expect(await error).toMatchObject({ status: 409, error: { code: "invalid_request", param: "item_id" } });
    expect(await read("a.txt")).toBe("edited by hand\n");
    await writeFile(path.join(dir, "a.txt"), "AA\n");

    // Once the file holds what the patch wrote again, undo takes back the newest patch as a whole.
    c.send({ type: "thread.undo", thread_id: threadId });
    expect(await c.next((e) => e.type === "patch.undone")).toMatchObject({
      item_id: second.id,
      paths: ["a.txt"],
    });
    expect(await read("a.txt")).toBe("A\n");
    // The first patch's b.txt was rejected already: undo restores only what is left of it.
    c.send({ type: "thread.undo", thread_id: threadId });
    expect(await c.next((e) => e.type === "patch.undone" && e.item_id === call.id)).toMatchObject({
      paths: ["a.txt"],
    });
    expect(await read("a.txt")).toBe("a\n");
    error = errorAfter(c);
    c.send({ type: "thread.undo", thread_id: threadId });
    expect((await error).error).toMatchObject({ code: "not_found" });
    error = errorAfter(c);
    c.send({ type: "patch.reject", thread_id: threadId, item_id: "call_nope", path: "a.txt" });
    expect((await error).error).toMatchObject({ code: "not_found" });
    c.ws.close();
  });
});

describe("agent host: managing threads", () => {
  test("rename: subscribers see thread.renamed, the list shows the new title, saved threads too", async () => {
    const { c, threadId } = await startedThread();
    // Only a session with a user message is listed.
    const turnMark = c.events.length;
    c.send({ type: "turn.start", thread_id: threadId, input: "hello" });
    await c.next((e) => e.type === "turn.completed", turnMark);
    const renameMark = c.events.length;
    c.send({ type: "thread.rename", thread_id: threadId, title: "  Fix the parser  " });
    expect(await c.next((e) => e.type === "thread.renamed", renameMark)).toMatchObject({
      thread: { id: threadId, title: "Fix the parser" },
    });
    // The list follows the rename, possibly in the same read: search from before the request.
    const list = await c.next((e) => e.type === "thread.list", renameMark);
    expect((list.threads as ThreadInfo[]).find((t) => t.id === threadId)?.title).toBe("Fix the parser");

    const mark = c.events.length;
    c.send({ type: "thread.rename", thread_id: "thr_saved", title: "renamed saved" });
    const savedList = await c.next((e) => e.type === "thread.list", mark);
    expect((savedList.threads as ThreadInfo[]).find((t) => t.id === "thr_saved")?.title).toBe(
      "renamed saved",
    );
    const error = errorAfter(c);
    c.send({ type: "thread.rename", thread_id: "thr_nope", title: "x" });
    expect((await error).error).toMatchObject({ code: "not_found" });
    c.ws.close();
  });

  test("subagent.cancel for a sub-agent that is not running is a clear error", async () => {
    const { c, threadId } = await startedThread();
    const error = errorAfter(c);
    c.send({ type: "subagent.cancel", thread_id: threadId, subagent_id: "sub_nope" });
    expect((await error).error).toMatchObject({ code: "not_found", param: "subagent_id" });
    c.ws.close();
  });

  test("delete: refused while a turn runs, then removes the thread for every subscriber", async () => {
    const { c, threadId } = await startedThread();
    const watcher = await connectHost(url);
    watcher.send({ type: "thread.resume", thread_id: threadId });
    await watcher.next((e) => e.type === "thread.started");
    c.send({ type: "turn.start", thread_id: threadId, input: "long" });
    await c.next((e) => e.type === "item.delta");
    let error = errorAfter(c);
    c.send({ type: "thread.delete", thread_id: threadId });
    expect((await error).error).toMatchObject({ code: "response_in_progress" });
    c.send({ type: "turn.interrupt", thread_id: threadId });
    await c.next((e) => e.type === "turn.completed");

    const deleteMark = c.events.length;
    c.send({ type: "thread.delete", thread_id: threadId });
    await c.next((e) => e.type === "thread.deleted", deleteMark);
    await watcher.next((e) => e.type === "thread.deleted" && e.thread_id === threadId, 0);
    const list = await c.next((e) => e.type === "thread.list", deleteMark);
    expect((list.threads as ThreadInfo[]).map((t) => t.id)).not.toContain(threadId);
    error = errorAfter(c);
    c.send({ type: "turn.start", thread_id: threadId, input: "hello" });
    expect((await error).error).toMatchObject({ code: "not_found" });
    c.ws.close();
    watcher.ws.close();
  });

  test("resuming a saved session sends its items as thread.history right after thread.started", async () => {
    const c = await connectHost(url);
    c.send({ type: "thread.resume", thread_id: "thr_saved" });
    const history = await c.next((e) => e.type === "thread.history");
    const types = c.events.map((e: HostTestEvent) => e.type);
    expect(types.slice(0, 2)).toEqual(["thread.started", "thread.history"]);
    expect((history.items as ThreadItem[]).map((item) => item.id)).toEqual(["item_u", "item_a"]);
    expect(history.seq).toBe(1);
    c.ws.close();
  });
});
