import { mkdtemp, readFile, realpath, rm, stat, utimes, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { readSession, Transcript } from "../agent/transcript.js";
import type { ThreadInfo, ThreadItem } from "../protocol/agent.js";
import type { AgentRuntime } from "./agent-runtime.js";
import { SessionThreadSource } from "./session-thread-source.js";

function info(id: string, cwd: string): ThreadInfo {
  const now = new Date().toISOString();
  return { id, title: "t", cwd, model: "m", createdAt: now, updatedAt: now };
}

test("a saved session of another workspace is refused, and nothing is started for it", async () => {
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-source-sessions-"));
  const here = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-source-here-")));
  const elsewhere = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-source-elsewhere-")));
  for (const thread of [info("thr_here", here), info("thr_elsewhere", elsewhere)]) {
    const transcript = await Transcript.create(sessions, thread);
    await transcript.flush();
  }
  const started: (string | undefined)[] = [];
  const runtime = {
    workspace: { root: here },
    newThread: async (file?: string) => {
      started.push(file);
      throw new Error("started");
    },
  } as unknown as AgentRuntime;
  const source = new SessionThreadSource(() => runtime, sessions);

  await expect(source.resume("thr_elsewhere")).rejects.toMatchObject({
    code: "invalid_request",
    param: "thread_id",
    message: expect.stringContaining(elsewhere),
  });
  expect(started).toEqual([]);
  // The workspace's own session goes on to the runtime.
  await expect(source.resume("thr_here")).rejects.toThrow("started");
  expect(started).toEqual([path.join(sessions, "thr_here.jsonl")]);
  expect(await source.resume("thr_missing")).toBeNull();
});

test("a list reads a transcript again only when it changed: its size or time", async () => {
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-source-list-"));
  const here = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-source-here-")));
  const transcript = await Transcript.create(sessions, { ...info("thr_a", here), title: "first" });
  transcript.observe({
    type: "item.completed",
    turn_id: "t",
    item: { type: "user_message", id: "u", text: "hi" },
  });
  await transcript.flush();
  const unused = await Transcript.create(sessions, info("thr_unused", here));
  await unused.flush();
  const source = new SessionThreadSource(() => ({}) as AgentRuntime, sessions);
  expect((await source.list()).map((t) => [t.id, t.title])).toEqual([["thr_a", "first"]]);

  // The same size and time: the list keeps what it read (the file is not read again).
  const file = path.join(sessions, "thr_a.jsonl");
  const before = await stat(file);
  const text = await readFile(file, "utf8");
  await writeFile(file, text.replace('"first"', '"FIRST"'));
  await utimes(file, before.atime, before.mtime);
  expect((await source.list()).map((t) => t.title)).toEqual(["first"]);

  // A new record changes the size: read again, the last thread record wins.
  transcript.saveThread({ ...info("thr_a", here), title: "renamed" });
  await transcript.flush();
  expect((await source.list()).map((t) => t.title)).toEqual(["renamed"]);
  await rm(file);
  expect(await source.list()).toEqual([]);
});

test("a fork gets a transcript of its own with its items, continued on the parent's model when served", async () => {
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-source-fork-"));
  const started: [string | undefined, string | undefined][] = [];
  const runtime = {
    models: ["m"],
    // The fork's folder is the runtime's own: it works there (a worktree thread's fork: its worktree).
    workspace: { root: "/w" },
    newThread: async (file?: string, model?: string) => {
      started.push([file, model]);
      return { thread: { info: { id: "thr_fork" } }, transcript: {} };
    },
  } as unknown as AgentRuntime;
  const source = new SessionThreadSource(() => runtime, sessions);
  const items: ThreadItem[] = [
    { type: "user_message", id: "u1", text: "hi" },
    { type: "agent_message", id: "a1", text: "hello" },
  ];
  const fork = { ...info("thr_fork", "/w"), title: "Fork of t" };
  await source.fork(fork, items);
  const file = path.join(sessions, "thr_fork.jsonl");
  expect(started).toEqual([[file, "m"]]);
  const saved = await readSession(file);
  expect(saved.thread).toEqual(fork);
  expect(saved.items).toEqual(items);
  // A model this runtime no longer serves: the default one.
  await source.fork({ ...fork, id: "thr_fork2", model: "gone" }, items);
  expect(started.at(-1)).toEqual([path.join(sessions, "thr_fork2.jsonl"), undefined]);
});
