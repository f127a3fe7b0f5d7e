import { mkdtemp, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { MAX_SESSION_DIFF_FILES, MAX_SESSION_DIFF_LINES, sessionDiff } from "./session-diff.js";
import { Workspace } from "./workspace.js";

async function workspace(): Promise<{ dir: string; workspace: Workspace }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-session-diff-"));
  return { dir, workspace: new Workspace(dir) };
}

test("a file back as it was is left out; a deleted one is a delete, a new one an add", async () => {
  const { dir, workspace: w } = await workspace();
  await writeFile(path.join(dir, "same.txt"), "x\n");
  await writeFile(path.join(dir, "new.txt"), "n\n");
  const files = new Map<string, Buffer | null>([
    [path.join(w.root, "same.txt"), Buffer.from("x\n")],
    [path.join(w.root, "gone.txt"), Buffer.from("g\n")],
    [path.join(w.root, "new.txt"), null],
  ]);
  const diff = await sessionDiff({ files, unkept: 1 }, w);
  expect(diff.files.map((file) => [file.path, file.kind])).toEqual([
    ["gone.txt", "delete"],
    ["new.txt", "add"],
  ]);
  expect(diff.omitted).toEqual([]);
  expect(diff.notes).toEqual(["1 turn's edits were too big to keep and are not shown."]);
});

test("bounds: binary files, a file turned into a symlink and files past the file or line bound are named, not diffed", async () => {
  const { dir, workspace: w } = await workspace();
  const files = new Map<string, Buffer | null>();
  await writeFile(path.join(dir, "blob.bin"), Buffer.from([0, 1, 2]));
  files.set(path.join(w.root, "blob.bin"), Buffer.from([0, 1]));
  await symlink("/etc/hostname", path.join(dir, "link.txt"));
  files.set(path.join(w.root, "link.txt"), Buffer.from("before\n"));
  await writeFile(path.join(dir, "huge.txt"), "l\n".repeat(MAX_SESSION_DIFF_LINES + 1));
  files.set(path.join(w.root, "huge.txt"), null);
  for (let i = 0; i <= MAX_SESSION_DIFF_FILES; i++) {
    await writeFile(path.join(dir, `f${i}.txt`), "after\n");
    files.set(path.join(w.root, `f${i}.txt`), Buffer.from("before\n"));
  }
  const diff = await sessionDiff({ files, unkept: 0 }, w);
  expect(diff.files).toHaveLength(MAX_SESSION_DIFF_FILES);
  expect(diff.omitted).toEqual(["blob.bin", "link.txt", "huge.txt", `f${MAX_SESSION_DIFF_FILES}.txt`]);
});
