import { describe, expect, test } from "vitest";
import { parsePatch } from "./patch-parser.js";
import { type PatchFileReader, planPatch } from "./patch-planner.js";
import { ToolError } from "./tool-error.js";

/** Files in memory: planning needs nothing but a reader. */
function reader(files: Record<string, string>): PatchFileReader {
  return async (path) => (path in files ? Buffer.from(files[path]!) : null);
}

describe("planPatch", () => {
  test("computes every file's new content without writing", async () => {
    const patch = parsePatch(
      [
        "*** Begin Patch",
        "*** Update File: a.txt",
        "@@",
        " 1",
        "-2",
        "+two",
        "*** Add File: b.txt",
        "+b",
        "*** Delete File: c.txt",
        "*** End Patch",
      ].join("\n"),
    );
    const changes = await planPatch(patch, reader({ "a.txt": "1\n2\n3\n", "c.txt": "c\n" }));
    expect(
      changes.map((c) => [c.kind, c.path, c.before?.toString() ?? null, c.after?.toString() ?? null]),
    ).toEqual([
      ["update", "a.txt", "1\n2\n3\n", "1\ntwo\n3\n"],
      ["add", "b.txt", null, "b\n"],
      ["delete", "c.txt", "c\n", null],
    ]);
  });

  test("a hunk marked End of File matches at the end even when the context repeats", async () => {
    const patch = parsePatch(
      ["*** Begin Patch", "*** Update File: a", "@@", " x", "+y", "*** End of File", "*** End Patch"].join(
        "\n",
      ),
    );
    const [change] = await planPatch(patch, reader({ a: "x\nmid\nx\n" }));
    expect(change?.after?.toString()).toBe("x\nmid\nx\ny\n");
  });

  test("a context line absent from the file is named", async () => {
    const patch = parsePatch(
      ["*** Begin Patch", "*** Update File: a", " one", "-nowhere", "*** End Patch"].join("\n"),
    );
    const error = await planPatch(patch, reader({ a: "one\ntwo\n" })).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe("patch_rejected");
    expect((error as ToolError).message).toContain('The line "nowhere" does not occur in the file at all.');
  });
});
