import { execFileSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { JsonLinesFile, readJsonLines } from "./json-lines-file.js";
import { failingFs, isRoot, lockFolder } from "./test-support/failing-fs.js";

const temp = () => mkdtemp(path.join(os.tmpdir(), "spark-jsonl-"));
const lines = async (file: string) => (await readFile(file, "utf8")).split("\n").filter(Boolean);
const records = async (file: string) => {
  const read: unknown[] = [];
  const found = await readJsonLines(file, (record) => read.push(record));
  return { read, ...found };
};
const mode = async (file: string) => (await stat(file)).mode & 0o777;

describe("JsonLinesFile", () => {
  test("one failed append (ENOSPC, injected mid-line) is reported once, nothing is dropped, and later appends write every record whole", async () => {
    const file = path.join(await temp(), "s.jsonl");
    const disk = failingFs("ENOSPC", 7);
    const errors: Error[] = [];
    let recovered = 0;
    const out = new JsonLinesFile(file, {
      fs: disk.fs,
      onError: (error) => errors.push(error),
      onRecovered: () => recovered++,
    });
    out.append({ n: 1 });
    disk.fail();
    out.append({ n: 2, text: "a line longer than seven bytes" });
    out.append({ n: 3 });
    await out.flush();
    expect(errors.map((error) => (error as NodeJS.ErrnoException).code)).toEqual(["ENOSPC"]);
    expect(out.error).not.toBeNull();
    expect(disk.state.failures).toBeGreaterThanOrEqual(3);
    // Seven bytes of record 2 reached the disk: the line is unfinished, not doubled.
    expect((await readFile(file, "utf8")).endsWith('{"n":2,')).toBe(true);

    disk.fail(false);
    out.append({ n: 4 });
    await out.flush();
    expect(recovered).toBe(1);
    expect(out.error).toBeNull();
    expect((await records(file)).read).toEqual([
      { n: 1 },
      { n: 2, text: "a line longer than seven bytes" },
      { n: 3 },
      { n: 4 },
    ]);
    expect((await records(file)).damaged).toBe(0);

    // A second outage is reported again.
    disk.fail();
    out.append({ n: 5 });
    await out.flush();
    expect(errors).toHaveLength(2);
  });

  test("a last line cut short by a crash is skipped on reading and cut before the next record", async () => {
    const file = path.join(await temp(), "s.jsonl");
    await writeFile(file, '{"n":1}\n{"n":2,"te');
    expect(await records(file)).toEqual({ read: [{ n: 1 }], damaged: 0, tornLast: true });
    const out = new JsonLinesFile(file);
    out.append({ n: 3 });
    expect(await lines(file)).toEqual(['{"n":1}', '{"n":3}']);
    expect(await records(file)).toEqual({ read: [{ n: 1 }, { n: 3 }], damaged: 0, tornLast: false });
  });

  test("a damaged line in the middle is skipped and counted; a file of one cut line is emptied before writing", async () => {
    const file = path.join(await temp(), "s.jsonl");
    await writeFile(file, '{"n":1}\nnot json\n{"n":2}\n');
    expect(await records(file)).toEqual({ read: [{ n: 1 }, { n: 2 }], damaged: 1, tornLast: false });
    const cut = path.join(path.dirname(file), "cut.jsonl");
    await writeFile(cut, '{"kind":"thr');
    new JsonLinesFile(cut).append({ n: 1 });
    expect(await lines(cut)).toEqual(['{"n":1}']);
  });

  test("files are 0600 in a 0700 folder; an existing 0644 file and 0755 folder are tightened when opened", async () => {
    const root = await temp();
    const fresh = path.join(root, "new", "deeper", "s.jsonl");
    new JsonLinesFile(fresh).append({ n: 1 });
    expect(await mode(fresh)).toBe(0o600);
    expect(await mode(path.dirname(fresh))).toBe(0o700);

    const old = path.join(root, "old");
    await mkdir(old, { mode: 0o755 });
    await chmod(old, 0o755);
    const file = path.join(old, "s.jsonl");
    await writeFile(file, '{"n":1}\n', { mode: 0o644 });
    await chmod(file, 0o644);
    new JsonLinesFile(file).secure();
    expect(await mode(file)).toBe(0o600);
    expect(await mode(old)).toBe(0o700);
    // A folder that does not exist yet is not made by securing alone.
    const absent = new JsonLinesFile(path.join(root, "absent", "s.jsonl"), {
      onError: () => expect.unreachable("nothing to secure is no error"),
    });
    absent.secure();
    await expect(stat(path.join(root, "absent"))).rejects.toMatchObject({ code: "ENOENT" });
  });

  test("a read-only folder (EACCES; the immutable attribute as root) is reported once, and every record is written once it is writable again", async (context) => {
    const dir = await temp();
    const locked = await lockFolder(dir);
    if ("reason" in locked) {
      console.log(`skipped: ${locked.reason}`);
      context.skip();
      return;
    }
    const file = path.join(dir, "s.jsonl");
    const errors: Error[] = [];
    const out = new JsonLinesFile(file, { onError: (error) => errors.push(error) });
    try {
      out.append({ n: 1 });
      out.append({ n: 2 });
      await out.flush();
    } finally {
      await locked.unlock();
    }
    expect(errors).toHaveLength(1);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe(isRoot ? "EPERM" : "EACCES");
    out.append({ n: 3 });
    expect((await records(file)).read).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  test("replace writes a new file atomically; appends made meanwhile follow it; a failed one keeps the old file and appends go on there", async () => {
    const dir = await temp();
    const file = path.join(dir, "c.jsonl");
    const disk = failingFs("ENOSPC");
    const errors: Error[] = [];
    const out = new JsonLinesFile(file, { fs: disk.fs, onError: (error) => errors.push(error) });
    for (let n = 0; n < 5; n++) out.append({ n });
    const replaced = out.replace([{ all: 5 }]);
    out.append({ n: 5 });
    expect(await replaced).toBe(true);
    await out.flush();
    expect((await records(file)).read).toEqual([{ all: 5 }, { n: 5 }]);
    expect(await mode(file)).toBe(0o600);

    disk.fail();
    const failed = out.replace([{ all: 6 }]);
    disk.fail(false);
    out.append({ n: 6 });
    expect(await failed).toBe(false);
    await out.flush();
    expect(errors).toHaveLength(1);
    expect((await records(file)).read).toEqual([{ all: 5 }, { n: 5 }, { n: 6 }]);
    // No temp file is left behind.
    expect(await readdir(dir)).toEqual(["c.jsonl"]);
  });
});

describe("JsonLinesFile on a full disk (a 256 KiB tmpfs)", () => {
  const mounted: string[] = [];
  afterAll(() => {
    for (const dir of mounted) execFileSync("umount", [dir]);
  });

  test("a real ENOSPC is reported once; the session's records wait, and are all written whole once space is freed", async (context) => {
    const dir = await temp();
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", dir], { stdio: "pipe" });
      mounted.push(dir);
    } catch (error) {
      console.log(
        `skipped: mounting a tmpfs is not permitted here (${isRoot ? "root" : "not root"}): ${(error as Error).message.split("\n")[0]}`,
      );
      context.skip();
      return;
    }
    const filler = path.join(dir, "filler");
    const file = path.join(dir, "sessions", "s.jsonl");
    const errors: Error[] = [];
    const out = new JsonLinesFile(file, { onError: (error) => errors.push(error) });
    out.append({ n: 0 });
    // Fill what is left, then append records bigger than any block that might remain.
    await writeFile(filler, Buffer.alloc(256 * 1024)).catch(() => {});
    const text = "x".repeat(3000);
    for (let n = 1; n <= 20; n++) out.append({ n, text });
    await out.flush();
    expect(errors.map((error) => (error as NodeJS.ErrnoException).code)).toEqual(["ENOSPC"]);
    await rm(filler);
    out.append({ n: 21 });
    await out.flush();
    expect(out.error).toBeNull();
    const { read, damaged, tornLast } = await records(file);
    expect(read.map((record) => (record as { n: number }).n)).toEqual(
      Array.from({ length: 22 }, (_, n) => n),
    );
    expect({ damaged, tornLast }).toEqual({ damaged: 0, tornLast: false });
  });
});
