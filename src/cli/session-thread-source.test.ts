import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { Transcript } from "../agent/transcript.js";
import type { ThreadInfo } from "../protocol/agent.js";
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
