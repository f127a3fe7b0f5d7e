import { appendFile, chmod, mkdir, mkdtemp, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import type { ThreadEvent, ThreadInfo } from "../protocol/agent.js";
import { failingFs } from "./test-support/failing-fs.js";
import { readSession, Transcript } from "./transcript.js";

const info: ThreadInfo = {
  id: "thr_transcript",
  title: "t",
  cwd: "/w",
  model: "m",
  createdAt: "2024-01-01T00:00:00.000Z",
  updatedAt: "2024-01-01T00:00:00.000Z",
};
const item = (id: string, text = "text"): ThreadEvent => ({
  type: "item.completed",
  turn_id: "turn",
  item: { type: "agent_message", id, text },
});
const temp = () => mkdtemp(path.join(os.tmpdir(), "spark-transcript-"));

test("regression (one failed append left the write chain rejected: every later write dropped, an unhandled rejection): the failure is reported once, flush says so, and every item is written once the disk has room", async () => {
  const dir = await temp();
  const disk = failingFs("ENOSPC", 3);
  const errors: Error[] = [];
  let recovered = 0;
  const transcript = Transcript.start(dir, info, {
    fs: disk.fs,
    onError: (error) => errors.push(error),
    onRecovered: () => recovered++,
  });
  transcript.observe(item("a1"));
  disk.fail();
  transcript.observe(item("a2", "written while the disk is full"));
  transcript.observe(item("a3"));
  await expect(transcript.flush()).rejects.toMatchObject({ code: "ENOSPC" });
  expect(errors).toHaveLength(1);
  expect(transcript.error).toMatchObject({ code: "ENOSPC" });

  disk.fail(false);
  transcript.observe(item("a4"));
  await transcript.flush();
  expect(recovered).toBe(1);
  const saved = await readSession(transcript.file);
  expect(saved.items.map((saved) => saved.id)).toEqual(["a1", "a2", "a3", "a4"]);
  expect(saved.damagedLines).toBe(0);
});

test("a transcript is 0600 in a 0700 folder; a resumed one of an older Spark (0644 in 0755) is tightened when opened", async () => {
  const fresh = path.join(await temp(), "sessions");
  const transcript = Transcript.start(fresh, info);
  transcript.observe(item("a1"));
  expect((await stat(transcript.file)).mode & 0o777).toBe(0o600);
  expect((await stat(fresh)).mode & 0o777).toBe(0o700);

  const old = path.join(await temp(), "old-sessions");
  await mkdir(old);
  await chmod(old, 0o755);
  const file = path.join(old, `${info.id}.jsonl`);
  await appendFile(file, `${JSON.stringify({ kind: "thread", thread: info })}\n`);
  await chmod(file, 0o644);
  await Transcript.open(file);
  expect((await stat(file)).mode & 0o777).toBe(0o600);
  expect((await stat(old)).mode & 0o777).toBe(0o700);
});

test("a transcript cut mid-line by a crash resumes: the cut line is skipped, and the next item starts a line of its own", async () => {
  const dir = await temp();
  const first = Transcript.start(dir, info);
  first.observe(item("a1"));
  await first.flush();
  await appendFile(first.file, '{"kind":"item","item":{"type":"agent_me');
  expect((await readSession(first.file)).items.map((saved) => saved.id)).toEqual(["a1"]);
  const resumed = await Transcript.open(first.file);
  resumed.observe(item("a2"));
  const saved = await readSession(first.file);
  expect(saved.items.map((saved) => saved.id)).toEqual(["a1", "a2"]);
  expect(saved.damagedLines).toBe(0);
});
