import { stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { EditJournal } from "./edit-journal.js";
import { tempWorkspace } from "./tools/test-support/temp-workspace.js";
import { ToolError } from "./tools/tool-error.js";

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );

describe("EditJournal", () => {
  test("undo restores an updated, a deleted and an added file byte for byte", async () => {
    await using t = await tempWorkspace();
    const updated = join(t.dir, "updated.bin");
    const deleted = join(t.dir, "deleted.txt");
    const added = join(t.dir, "sub", "added.txt");
    const original = Buffer.from([0, 1, 2, 0xff, 0x0d, 0x0a, 0x80]);
    const gone = Buffer.from("bye\r\nno newline");
    await writeFile(updated, "new content");
    await t.write("sub/added.txt", "hello\n");
    const journal = new EditJournal();
    expect(journal.canUndo).toBe(false);
    journal.record({
      files: [
        { path: updated, before: original, after: Buffer.from("new content") },
        { path: deleted, before: gone, after: null, mode: 0o640 },
        { path: added, before: null, after: Buffer.from("hello\n") },
      ],
    });
    expect(journal.canUndo).toBe(true);

    const { paths } = await journal.undo();
    expect(paths).toEqual([updated, deleted, added]);
    expect((await t.read("updated.bin")).equals(original)).toBe(true);
    expect((await t.read("deleted.txt")).equals(gone)).toBe(true);
    expect((await stat(deleted)).mode & 0o777).toBe(0o640);
    expect(await exists(added)).toBe(false);
    expect(journal.canUndo).toBe(false);
  });

  test("undoes newest first and forgets beyond its capacity", async () => {
    await using t = await tempWorkspace({ files: { "a.txt": "3" } });
    const path = join(t.dir, "a.txt");
    const journal = new EditJournal({ capacity: 2 });
    for (let i = 0; i < 3; i++) {
      journal.record({
        files: [{ path, before: Buffer.from(String(i)), after: Buffer.from(String(i + 1)) }],
      });
    }
    expect(journal.size).toBe(2);
    await journal.undo();
    expect((await t.read("a.txt")).toString()).toBe("2");
    await journal.undo();
    expect((await t.read("a.txt")).toString()).toBe("1");
    expect(journal.canUndo).toBe(false);
  });

  test("nothing to undo is a not_found ToolError", async () => {
    const error = await new EditJournal().undo().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe("not_found");
  });

  test("a failed undo changes nothing and keeps the edit", async () => {
    await using t = await tempWorkspace({ files: { "a.txt": "after", blocker: "a file" } });
    const journal = new EditJournal();
    journal.record({
      files: [
        { path: join(t.dir, "a.txt"), before: Buffer.from("before"), after: Buffer.from("after") },
        // Its parent is a file, so the restore cannot be staged.
        { path: join(t.dir, "blocker", "b.txt"), before: Buffer.from("b"), after: null },
      ],
    });
    const error = await journal.undo().catch((caught: unknown) => caught);
    expect((error as ToolError).code).toBe("failed");
    expect((await t.read("a.txt")).toString()).toBe("after");
    expect(journal.canUndo).toBe(true);
  });
});
