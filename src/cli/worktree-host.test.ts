import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { type Script, ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "../host/test-support/host-client.js";
import { type ServeStack, startServe } from "./serve-stack.js";

// `thread.start {worktree}` over the agent host's WebSocket, as the web app sends it, on the stack
// `spark serve` runs (scripted engine, real git).

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" });

const edit = (to: string) =>
  JSON.stringify({
    patch: ["*** Begin Patch", "*** Update File: a.txt", "@@", "-one", `+${to}`, "*** End Patch"].join("\n"),
  });

/** Each message names its edit; after a tool result, "done". */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "tool") return { text: "done" };
  const text = last?.role === "user" ? last.content : "";
  if (text.includes("edit main"))
    return { toolCalls: [{ name: "apply_patch", arguments: edit("main edit") }] };
  if (text.includes("edit tree"))
    return { toolCalls: [{ name: "apply_patch", arguments: edit("tree edit") }] };
  if (text.includes("touch git")) {
    const patch = ["*** Begin Patch", "*** Update File: .git", "@@", "+gitdir: /tmp/evil", "*** End Patch"];
    return { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: patch.join("\n") }) }] };
  }
  return { text: "ok" };
};

const stacks: ServeStack[] = [];
const clients: HostTestClient[] = [];
let home: string;
let sessions: string;

beforeEach(async () => {
  home = await mkdtemp(path.join(os.tmpdir(), "spark-wth-home-"));
  sessions = await mkdtemp(path.join(os.tmpdir(), "spark-wth-sessions-"));
  // Where Spark's worktrees go (the host reads it from its environment).
  vi.stubEnv("SPARK_HOME", home);
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.ws.close();
  for (const stack of stacks.splice(0)) await stack.close();
  vi.unstubAllEnvs();
});

async function repository(): Promise<string> {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-wth-repo-")));
  git(repo, "init", "-q", "-b", "main");
  await writeFile(path.join(repo, "a.txt"), "one\n");
  git(repo, "add", ".");
  git(repo, "commit", "-qm", "init");
  return repo;
}

async function serve(cwd: string): Promise<{ stack: ServeStack; client: HostTestClient }> {
  const engine = new ScriptedEngine({ script, tokensPerSecond: 400 });
  const stack = await startServe({ engine, cwd, sessionsDir: sessions, webDir: null, apiKeys: [] });
  stacks.push(stack);
  const client = await connectHost(`${stack.server.url.replace("http", "ws")}/v1/agent`);
  clients.push(client);
  return { stack, client };
}

/** Sends a request with an id; resolves with its ack, rejects with its error. */
async function request(client: HostTestClient, id: string, message: object): Promise<HostTestEvent> {
  const answer = client.next((e) => e.request_id === id && (e.type === "ack" || e.type === "error"));
  client.send({ ...message, request_id: id });
  const event = await answer;
  if (event.type === "error") throw Object.assign(new Error("host error"), event.error as object);
  return event;
}

describe("thread.start {worktree}", () => {
  test("a worktree session edits while a main-tree session edits: each lands in its own tree and branch", async () => {
    const repo = await repository();
    const { client } = await serve(repo);
    const mainStarted = client.next((e) => e.type === "thread.started");
    const main = (await request(client, "m", { type: "thread.start" })).thread_id as string;
    expect(((await mainStarted).thread as { cwd: string }).cwd).toBe(repo);

    const treeStarted = client.next((e) => e.type === "thread.started" && e.thread_id !== main);
    const tree = (await request(client, "w", { type: "thread.start", worktree: { name: "feature" } }))
      .thread_id as string;
    const info = (await treeStarted).thread as { cwd: string; worktree?: object };
    expect(info.worktree).toEqual({ name: "feature", branch: "spark/feature" });
    expect(path.basename(info.cwd)).toBe("feature");
    expect(info.cwd.startsWith(await realpath(home))).toBe(true);
    expect(git(info.cwd, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("spark/feature");

    // Both turns run at once: both start before either ends.
    const from = client.events.length;
    const done = (id: string) => client.next((e) => e.type === "turn.completed" && e.thread_id === id, from);
    const bothDone = Promise.all([done(main), done(tree)]);
    await request(client, "t1", { type: "turn.start", thread_id: main, input: "edit main" });
    await request(client, "t2", { type: "turn.start", thread_id: tree, input: "edit tree" });
    const [mainDone, treeDone] = await bothDone;
    expect([mainDone.status, treeDone.status]).toEqual(["completed", "completed"]);
    const order = client.events
      .slice(from)
      .filter((e) => e.type === "turn.started" || e.type === "turn.completed");
    expect(order.map((e) => e.type)).toEqual([
      "turn.started",
      "turn.started",
      "turn.completed",
      "turn.completed",
    ]);
    const patches = client.events
      .slice(from)
      .filter((e) => e.type === "item.completed" && (e.item as { type: string }).type === "tool_call");
    expect(patches.map((e) => (e.item as { status: string }).status)).toEqual(["completed", "completed"]);

    expect(await readFile(path.join(repo, "a.txt"), "utf8")).toBe("main edit\n");
    expect(await readFile(path.join(info.cwd, "a.txt"), "utf8")).toBe("tree edit\n");
    git(repo, "commit", "-qam", "main's edit");
    git(info.cwd, "commit", "-qam", "the worktree's edit");
    expect(git(repo, "show", "main:a.txt")).toBe("main edit\n");
    expect(git(repo, "show", "spark/feature:a.txt")).toBe("tree edit\n");
    expect(git(repo, "merge-base", "main", "spark/feature").trim()).toBe(
      git(repo, "rev-parse", "main~1").trim(),
    );

    // Both are listed, each with its folder.
    const listed = client.next((e) => e.type === "thread.list");
    await request(client, "l", { type: "thread.list" });
    const threads = (await listed).threads as { id: string; cwd: string; worktree?: { name: string } }[];
    expect(threads.find((t) => t.id === main)).toMatchObject({ cwd: repo });
    expect(threads.find((t) => t.id === main)?.worktree).toBeUndefined();
    expect(threads.find((t) => t.id === tree)).toMatchObject({
      cwd: info.cwd,
      worktree: { name: "feature" },
    });

    // The same name again: a new session in the same worktree.
    const again = client.next(
      (e) => e.type === "thread.started" && e.thread_id !== main && e.thread_id !== tree,
    );
    await request(client, "w2", { type: "thread.start", worktree: { name: "feature" } });
    expect(((await again).thread as { cwd: string }).cwd).toBe(info.cwd);
  });

  test("the worktree's .git stays protected for the session's tools", async () => {
    const repo = await repository();
    const { client } = await serve(repo);
    const started = client.next((e) => e.type === "thread.started");
    const tree = (await request(client, "w", { type: "thread.start", worktree: {} })).thread_id as string;
    const cwd = ((await started).thread as { cwd: string }).cwd;
    const dotGit = await readFile(path.join(cwd, ".git"), "utf8");
    const failed = client.next(
      (e) => e.type === "item.completed" && (e.item as { type: string }).type === "tool_call",
    );
    await request(client, "t", { type: "turn.start", thread_id: tree, input: "touch git" });
    expect((await failed).item).toMatchObject({
      status: "failed",
      output: expect.stringContaining("off limits"),
    });
    expect(await readFile(path.join(cwd, ".git"), "utf8")).toBe(dotGit);
  });

  test("a worktree session resumes on a restarted host, in its worktree", async () => {
    const repo = await repository();
    const first = await serve(repo);
    const started = first.client.next((e) => e.type === "thread.started");
    const tree = (await request(first.client, "w", { type: "thread.start", worktree: { name: "again" } }))
      .thread_id as string;
    const cwd = ((await started).thread as { cwd: string }).cwd;
    const done = first.client.next((e) => e.type === "turn.completed");
    await request(first.client, "t", { type: "turn.start", thread_id: tree, input: "edit tree" });
    await done;
    await stacks.pop()?.close();

    const second = await serve(repo);
    const history = second.client.next((e) => e.type === "thread.started" || e.type === "thread.history");
    await request(second.client, "r", { type: "thread.resume", thread_id: tree });
    expect(await history).toMatchObject({
      type: "thread.started",
      thread: { cwd, worktree: { name: "again" } },
    });
    const next = second.client.next((e) => e.type === "turn.completed");
    await request(second.client, "t2", { type: "turn.start", thread_id: tree, input: "hello" });
    expect((await next).status).toBe("completed");
  });

  test("forking a worktree thread ran the fork in the main checkout: the fork edits in the parent's worktree", async () => {
    const repo = await repository();
    const { client } = await serve(repo);
    const started = client.next((e) => e.type === "thread.started");
    const tree = (await request(client, "w", { type: "thread.start", worktree: { name: "forked" } }))
      .thread_id as string;
    const cwd = ((await started).thread as { cwd: string }).cwd;
    const first = client.next((e) => e.type === "turn.completed" && e.thread_id === tree);
    await request(client, "t", { type: "turn.start", thread_id: tree, input: "hello" });
    await first;

    const forkStarted = client.next((e) => e.type === "thread.started" && e.thread_id !== tree);
    const fork = (await request(client, "f", { type: "thread.fork", thread_id: tree })).thread_id as string;
    expect((await forkStarted).thread).toMatchObject({ cwd, worktree: { name: "forked" } });
    const edited = client.next((e) => e.type === "turn.completed" && e.thread_id === fork);
    await request(client, "e", { type: "turn.start", thread_id: fork, input: "edit tree" });
    expect((await edited).status).toBe("completed");
    expect(await readFile(path.join(cwd, "a.txt"), "utf8")).toBe("tree edit\n");
    expect(await readFile(path.join(repo, "a.txt"), "utf8")).toBe("one\n");
  });

  test("invalid worktree fields are refused at the edge; outside a git repository, a clear error", async () => {
    const repo = await repository();
    const { client } = await serve(repo);
    for (const worktree of [
      { name: "../up" },
      { name: "a/b" },
      { name: "" },
      { name: "x", base: "main" },
      "x",
      null,
    ]) {
      await expect(request(client, "bad", { type: "thread.start", worktree })).rejects.toMatchObject({
        code: "invalid_event",
      });
    }
    const outside = await mkdtemp(path.join(os.tmpdir(), "spark-wth-plain-"));
    const plain = await serve(outside);
    await expect(
      request(plain.client, "nogit", { type: "thread.start", worktree: {} }),
    ).rejects.toMatchObject({
      code: "invalid_request",
      param: "worktree",
      message: expect.stringContaining("need a git repository"),
    });
  });
});
