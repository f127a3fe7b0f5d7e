import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { readSession } from "../agent/transcript.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import type { ThreadEvent } from "../protocol/agent.js";
import { AgentRuntime } from "../runtime/agent-runtime.js";

test("a session that cannot be saved is one notice in the thread, which every face shows; the turns go on, and a second notice says when it is saved again", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-save-notice-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const parent = await mkdtemp(path.join(os.tmpdir(), "spark-save-notice-sessions-"));
  // A sessions folder under a regular file: no one can make it (ENOTDIR), root included.
  await writeFile(path.join(parent, "blocked"), "");
  const sessions = path.join(parent, "blocked", "sessions");
  await using runtime = await AgentRuntime.start({
    cwd: repo,
    loadTier: async (name) => new ScriptedEngine({ id: name }),
    sessionsDir: sessions,
    prewarm: false,
  });
  const { thread } = await runtime.newThread();
  const events: ThreadEvent[] = [];
  thread.on((event) => events.push(event));
  const notices = () =>
    events.flatMap((e) => (e.type === "item.completed" && e.item.type === "notice" ? [e.item.text] : []));

  await thread.startTurn("first");
  await thread.startTurn("second");
  expect(notices()).toEqual([expect.stringMatching(/^The session could not be saved .*ENOTDIR.*It goes on/)]);
  const ends = events.flatMap((e) => (e.type === "turn.completed" ? [e] : []));
  expect(
    ends.map((e) => e.status),
    JSON.stringify(ends),
  ).toEqual(["completed", "completed"]);

  await rm(path.join(parent, "blocked"));
  await mkdir(path.join(parent, "blocked"));
  await thread.startTurn("third");
  expect(notices()[1]).toMatch(/^The session is saved again/);
  const saved = await readSession(path.join(sessions, `${thread.info.id}.jsonl`));
  // Nothing said while it could not be saved is lost, the first notice included.
  expect(
    saved.items
      .filter((item) => item.type === "user_message")
      .map((item) => item.type === "user_message" && item.text),
  ).toEqual(["first", "second", "third"]);
  expect(
    saved.items.some(
      (item) => item.type === "notice" && item.text.startsWith("The session could not be saved"),
    ),
  ).toBe(true);
});
