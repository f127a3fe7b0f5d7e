import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { Checkpoints } from "./checkpoints.js";
import { failingFs, lockFolder } from "./test-support/failing-fs.js";

const temp = () => mkdtemp(path.join(os.tmpdir(), "spark-checkpoints-safe-"));
const edit = (file: string, before: string | null, after: string | null) => ({
  files: [
    {
      path: file,
      before: before === null ? null : Buffer.from(before),
      after: after === null ? null : Buffer.from(after),
    },
  ],
});

test("regression (checkpoints past 2 x 32 MiB were not read on resume): the file is compacted atomically past its bound, so a resumed session still rewinds every turn", async () => {
  const dir = await temp();
  const store = path.join(dir, "thr_x.checkpoints");
  const file = path.join(dir, "a.txt");
  const bounds = { compactAtBytes: 2048 };
  const writer = Checkpoints.inMemory(bounds);
  writer.storeIn(store);
  // Every turn but the first and the last is let go (a conversation rewound past it): the log grows, what is kept does not.
  let content = "start";
  for (let turn = 0; turn < 60; turn++) {
    const next = `turn ${turn} ${"x".repeat(60)}`;
    writer.recorded(`u${turn}`, edit(file, content, next));
    if (turn > 0 && turn < 59) writer.moveTo(new Set([`u${turn}`]), null);
    content = next;
  }
  await writeFile(file, content);
  await writer.flush();
  const size = (await stat(store)).size;
  expect(size).toBeLessThan(2048 * 2);
  expect((await stat(store)).mode & 0o777).toBe(0o600);
  // No temp file is left beside it.
  expect(await readdir(dir)).toEqual(["a.txt", "thr_x.checkpoints"]);

  const warnings: string[] = [];
  const reopened = await Checkpoints.open(store, {
    ...bounds,
    onWarning: (message) => warnings.push(message),
  });
  expect(warnings).toEqual([]);
  expect(reopened.bytes).toBe(writer.bytes);
  await expect(reopened.rewind(new Set(["u0", "u59"]))).resolves.toMatchObject({ paths: [file] });
  expect(await readFile(file, "utf8")).toBe("start");
});

test("a checkpoints file larger than Spark reads is said so, and the resumed session's earlier turns refuse a code rewind with the reason instead of restoring nothing", async () => {
  const dir = await temp();
  const store = path.join(dir, "thr_x.checkpoints");
  const writer = Checkpoints.inMemory();
  writer.storeIn(store);
  writer.recorded("u1", edit(path.join(dir, "a.txt"), "a".repeat(600), "b".repeat(600)));
  await writer.flush();
  const warnings: string[] = [];
  const reopened = await Checkpoints.open(store, {
    maxFileBytes: 256,
    earlierTurns: ["u1"],
    onWarning: (message) => warnings.push(message),
  });
  expect(warnings).toEqual([
    expect.stringMatching(/could not be read: it is .* MiB, over the .* Spark reads/),
  ]);
  await expect(reopened.rewind(new Set(["u1"]))).rejects.toMatchObject({
    status: 409,
    message: expect.stringContaining("its checkpoints could not be read"),
  });
  await reopened.flush();
  // Replaced by what is known now: the next resume reads it, and still refuses.
  const again = await Checkpoints.open(store, { maxFileBytes: 256 });
  await expect(again.rewind(new Set(["u1"]))).rejects.toMatchObject({ status: 409 });
});

test("an unreadable checkpoints file and damaged lines are said so on resume, never dropped silently", async () => {
  const dir = await temp();
  const unreadable = path.join(dir, "thr_a.checkpoints");
  await mkdir(unreadable);
  const warnings: string[] = [];
  const opened = await Checkpoints.open(unreadable, {
    earlierTurns: ["u1"],
    onWarning: (message) => warnings.push(message),
  });
  expect(warnings[0]).toMatch(/could not be read: EISDIR/);
  await expect(opened.rewind(new Set(["u1"]))).rejects.toMatchObject({ status: 409 });

  const damaged = path.join(dir, "thr_b.checkpoints");
  const writer = Checkpoints.inMemory();
  writer.storeIn(damaged);
  writer.recorded("u1", edit(path.join(dir, "a.txt"), "a", "b"));
  await writer.flush();
  await writeFile(
    damaged,
    `garbage\n{"kind":"nonsense"}\n${await readFile(damaged, "utf8")}{"kind":"edit","se`,
  );
  const notes: string[] = [];
  const reopened = await Checkpoints.open(damaged, { onWarning: (message) => notes.push(message) });
  // The torn last line is a crash's, not damage.
  expect(notes).toEqual([expect.stringMatching(/^2 damaged lines of the code checkpoints/)]);
  expect(reopened.bytes).toBe(2);
});

test("a checkpoint write that fails (ENOSPC, injected) is said once, rewinding goes on, and the record is written with the next edit", async () => {
  const dir = await temp();
  const store = path.join(dir, "thr_x.checkpoints");
  const disk = failingFs("ENOSPC", 5);
  const warnings: string[] = [];
  const writer = Checkpoints.inMemory({ fs: disk.fs, onWarning: (message) => warnings.push(message) });
  writer.storeIn(store);
  disk.fail();
  writer.recorded("u1", edit(path.join(dir, "a.txt"), "a", "b"));
  writer.recorded("u2", edit(path.join(dir, "b.txt"), "c", "d"));
  await writer.flush();
  expect(warnings).toEqual([
    expect.stringMatching(/^The code checkpoints could not be saved .*ENOSPC.*kept and written/),
  ]);
  disk.fail(false);
  writer.recorded("u3", edit(path.join(dir, "c.txt"), "e", "f"));
  await writer.flush();
  expect(warnings[1]).toMatch(/^The code checkpoints are saved again/);
  expect((await Checkpoints.open(store)).bytes).toBe(6);
});

test("regression (a restore that failed half-way said nothing was changed): a rewind cut short names the files it restored and the ones it did not, and rewinding again finishes", async (context) => {
  const dir = await temp();
  const kept = path.join(dir, "kept.txt");
  const lockedDir = path.join(dir, "locked");
  await mkdir(lockedDir);
  const created = path.join(lockedDir, "created.txt");
  await writeFile(kept, "after");
  await writeFile(created, "new");
  const checkpoints = Checkpoints.inMemory({ name: (file) => path.relative(dir, file) });
  checkpoints.recorded("u1", {
    files: [
      { path: kept, before: Buffer.from("before"), after: Buffer.from("after") },
      { path: created, before: null, after: Buffer.from("new") },
    ],
  });
  const locked = await lockFolder(lockedDir);
  if ("reason" in locked) {
    console.log(`skipped: ${locked.reason}`);
    context.skip();
    return;
  }
  try {
    await expect(checkpoints.rewind(new Set(["u1"]))).rejects.toMatchObject({
      message: expect.stringMatching(
        /^Restoring was cut short: restored kept\.txt; not restored: locked\/created\.txt \((EACCES|EPERM).*\)\. The files not restored are as they were\. Rewind again to restore the rest\.$/,
      ),
    });
  } finally {
    await locked.unlock();
  }
  expect(await readFile(kept, "utf8")).toBe("before");
  expect(await readFile(created, "utf8")).toBe("new");
  await expect(checkpoints.rewind(new Set(["u1"]))).resolves.toMatchObject({ paths: [kept, created] });
  await expect(stat(created)).rejects.toMatchObject({ code: "ENOENT" });
});
