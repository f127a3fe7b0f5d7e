import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { Checkpoints } from "./checkpoints.js";

const edit = (file: string, before: string | null, after: string | null) => ({
  files: [
    {
      path: file,
      before: before === null ? null : Buffer.from(before),
      after: after === null ? null : Buffer.from(after),
    },
  ],
});

test("a turn over the per-turn bound cannot rewind code, and says why; the others still can", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-checkpoints-"));
  const file = path.join(dir, "a.txt");
  await writeFile(file, "12345678");
  const checkpoints = Checkpoints.inMemory({ maxTurnBytes: 16 });
  checkpoints.recorded("u1", edit(file, "1234", "12345678"));
  checkpoints.recorded("u2", edit(file, "12345678", "123456789"));
  expect(checkpoints.bytes).toBe(12);
  await expect(checkpoints.rewind(new Set(["u1", "u2"]))).rejects.toMatchObject({
    status: 409,
    message: expect.stringContaining("its edits change more than"),
  });
  expect(await readFile(file, "utf8")).toBe("12345678");
  await expect(checkpoints.rewind(new Set(["u1"]))).resolves.toMatchObject({ paths: [file] });
  expect(await readFile(file, "utf8")).toBe("1234");
});

test("the session bound: once reached, later turns are not rewindable for code", async () => {
  const checkpoints = Checkpoints.inMemory({ maxSessionBytes: 10 });
  checkpoints.recorded("u1", edit("/none/a", "1234", "5678"));
  checkpoints.recorded("u2", edit("/none/a", "5678", "9012"));
  await expect(checkpoints.rewind(new Set(["u2"]))).rejects.toMatchObject({
    message: expect.stringContaining("the session's checkpoints reached"),
  });
});

test("kept in a file: a reopened store rewinds what the first recorded, a created file is removed", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-checkpoints-"));
  const store = path.join(dir, "sessions", "thr_x.checkpoints");
  const created = path.join(dir, "b.bin");
  const bytes = Buffer.from([0, 255, 10, 13, 128]);
  await writeFile(created, bytes);
  const first = Checkpoints.inMemory();
  first.storeIn(store);
  first.recorded("u1", { files: [{ path: created, before: null, after: bytes }] });
  await first.flush();
  const reopened = await Checkpoints.open(store);
  expect(reopened.bytes).toBe(5);
  await reopened.rewind(new Set(["u1"]));
  await expect(readFile(created)).rejects.toMatchObject({ code: "ENOENT" });
  await reopened.flush();
  expect((await Checkpoints.open(store)).bytes).toBe(0);
});

test("a stored edit naming a file outside the workspace is not loaded: its turn cannot rewind code", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-checkpoints-"));
  const store = path.join(dir, "thr_x.checkpoints");
  const root = path.join(dir, "work");
  const writer = Checkpoints.inMemory();
  writer.storeIn(store);
  writer.recorded("u1", edit(path.join(root, "a.txt"), "a", "b"));
  writer.recorded("u2", edit(path.join(dir, "elsewhere.txt"), "x", "y"));
  await writer.flush();
  const loaded = await Checkpoints.open(store, { root });
  expect(loaded.bytes).toBe(2);
  await expect(loaded.rewind(new Set(["u2"]))).rejects.toMatchObject({
    message: expect.stringContaining("outside the workspace"),
  });
});
