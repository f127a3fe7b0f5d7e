import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { readSession } from "../agent/transcript.js";
import type { ThreadEvent, ThreadInfo } from "../protocol/agent.js";
import { AgentRuntime } from "./agent-runtime.js";
import { SessionRecorder } from "./session-recorder.js";
import { scriptedTiers } from "./test-support/scripted-tiers.js";

const info: ThreadInfo = {
  id: "thr_recorder",
  title: "hello",
  cwd: "/w",
  model: "",
  createdAt: "2024-01-01T00:00:00.000Z",
  updatedAt: "2024-01-01T00:00:00.000Z",
};
const user: ThreadEvent = {
  type: "item.completed",
  turn_id: "t",
  item: { type: "user_message", id: "u1", text: "hello" },
};
const agent: ThreadEvent = {
  type: "item.completed",
  turn_id: "t",
  item: { type: "agent_message", id: "a1", text: "hi" },
};

describe("session recorder", () => {
  test("writes nothing until the first user message, then every item from it on", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-recorder-"));
    const errors: string[] = [];
    const recorder = SessionRecorder.create({ info }, dir, (message) => errors.push(message));
    recorder.observe({ type: "turn.started", turn_id: "t", input: "hello" });
    recorder.saveThread(info);
    await recorder.flush();
    expect(await readdir(dir)).toEqual([]);
    expect(recorder.file).toBeNull();

    recorder.observe(user);
    recorder.observe(agent);
    recorder.saveThread({ ...info, title: "renamed" });
    await recorder.flush();
    expect(recorder.file).toBe(path.join(dir, "thr_recorder.jsonl"));
    const saved = await readSession(recorder.file!);
    expect(saved.items.map((item) => item.id)).toEqual(["u1", "a1"]);
    expect(saved.thread.title).toBe("renamed");
    expect(errors).toEqual([]);
  });

  test("a transcript it cannot write is reported once, the session goes on, and every record is written once the folder can be made", async () => {
    const parent = await mkdtemp(path.join(os.tmpdir(), "spark-recorder-ro-"));
    await writeFile(path.join(parent, "file"), "");
    const notices: string[] = [];
    // A path under a regular file: mkdir fails whoever runs the test.
    const dir = path.join(parent, "file", "sessions");
    const recorder = SessionRecorder.create({ info }, dir, (message) => notices.push(message));
    recorder.observe(user);
    await recorder.flush();
    recorder.observe(agent);
    recorder.observe({ ...user, item: { ...user.item, id: "u2" } });
    await recorder.flush();
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/^The session could not be saved .*ENOTDIR.* It goes on/);
    expect(recorder.error).toMatchObject({ code: "ENOTDIR" });

    await rm(path.join(parent, "file"));
    await mkdir(path.join(parent, "file"));
    recorder.observe({ ...agent, item: { ...agent.item, id: "a2" } });
    await recorder.flush();
    expect(recorder.error).toBeNull();
    expect(notices[1]).toMatch(/^The session is saved again/);
    const saved = await readSession(recorder.file!);
    expect(saved.items.map((item) => item.id)).toEqual(["u1", "a1", "u2", "a2"]);
  });

  test("a runtime's thread opened and never used leaves no transcript; a used one does", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-recorder-rt-"));
    const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-recorder-sessions-"));
    execFileSync("git", ["init", "-q"], { cwd: dir });
    await using runtime = await AgentRuntime.start({
      cwd: dir,
      loadTier: scriptedTiers({ "*": {} }),
      sessionsDir: sessions,
      prewarm: false,
    });
    const unused = await runtime.newThread();
    await unused.transcript.flush();
    expect(await readdir(sessions)).toEqual([]);
    const used = await runtime.newThread();
    await used.thread.startTurn("hello there");
    await used.transcript.flush();
    expect(await readdir(sessions)).toEqual([`${used.thread.info.id}.jsonl`]);
    const saved = await readSession(path.join(sessions, `${used.thread.info.id}.jsonl`));
    expect(saved.thread.title).toBe("hello there");
    expect(saved.items.map((item) => item.type)).toEqual(["user_message", "agent_message"]);
  });
});
