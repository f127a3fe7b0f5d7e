import { describe, expect, test } from "vitest";
import { type DiffHunk, diffText, formatUnifiedDiff } from "./diff.js";

const lines = (n: number, prefix = "line") =>
  Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}\n`).join("");

/** Rebuilds the new text's lines from the old ones and the hunks, as `patch` would. */
function applyHunks(old: string[], hunks: DiffHunk[]): string[] {
  const out: string[] = [];
  let at = 0;
  for (const hunk of hunks) {
    const start = hunk.oldLines === 0 ? hunk.oldStart : hunk.oldStart - 1;
    while (at < start) out.push(old[at++]!);
    for (const line of hunk.lines) {
      if (line.kind === "add") out.push(line.text);
      else {
        expect(old[at]).toBe(line.text);
        at++;
        if (line.kind === "context") out.push(line.text);
      }
    }
  }
  while (at < old.length) out.push(old[at++]!);
  return out;
}

function lcsLength(a: string[], b: string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (const x of a) {
    let diagonal = 0;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = x === b[j - 1] ? diagonal + 1 : Math.max(row[j]!, row[j - 1]!);
      diagonal = above;
    }
  }
  return row[b.length]!;
}

describe("diffText", () => {
  test("one changed line gets three lines of context and unified numbering", () => {
    const before = lines(10);
    const after = before.replace("line 5\n", "line five\n");
    const diff = diffText("src/a.ts", before, after);
    expect(diff).toMatchObject({ path: "src/a.ts", kind: "update", added: 1, removed: 1 });
    expect(diff.hunks).toHaveLength(1);
    expect(formatUnifiedDiff(diff)).toBe(
      [
        "--- a/src/a.ts",
        "+++ b/src/a.ts",
        "@@ -2,7 +2,7 @@",
        " line 2",
        " line 3",
        " line 4",
        "-line 5",
        "+line five",
        " line 6",
        " line 7",
        " line 8",
        "",
      ].join("\n"),
    );
  });

  test("changes far apart make separate hunks; close ones share a hunk", () => {
    const before = lines(40);
    const far = before.replace("line 3\n", "x\n").replace("line 30\n", "y\n");
    expect(diffText("a", before, far).hunks.map((h) => [h.oldStart, h.oldLines])).toEqual([
      [1, 6],
      [27, 7],
    ]);
    const near = before.replace("line 10\n", "x\n").replace("line 16\n", "y\n");
    expect(diffText("a", before, near).hunks).toHaveLength(1);
  });

  test("added and deleted files", () => {
    const added = diffText("new.ts", null, "a\nb\n");
    expect(added).toMatchObject({ kind: "add", added: 2, removed: 0 });
    expect(formatUnifiedDiff(added)).toBe("--- /dev/null\n+++ b/new.ts\n@@ -0,0 +1,2 @@\n+a\n+b\n");
    const deleted = diffText("old.ts", "a\n", null);
    expect(deleted).toMatchObject({ kind: "delete", added: 0, removed: 1 });
    expect(formatUnifiedDiff(deleted)).toBe("--- a/old.ts\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-a\n");
  });

  test("a missing final newline is a change and is marked", () => {
    const diff = diffText("a", "x\ny\n", "x\ny");
    expect(diff).toMatchObject({ added: 1, removed: 1 });
    expect(formatUnifiedDiff(diff)).toBe(
      "--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n x\n-y\n+y\n\\ No newline at end of file\n",
    );
  });

  test("CRLF line endings are not part of the shown text", () => {
    const diff = diffText("a", "one\r\ntwo\r\n", "one\r\n2\r\n");
    expect(diff.hunks[0]!.lines).toEqual([
      { kind: "context", text: "one" },
      { kind: "remove", text: "two" },
      { kind: "add", text: "2" },
    ]);
  });

  test("identical texts have no hunks", () => {
    expect(diffText("a", "same\n", "same\n")).toMatchObject({ hunks: [], added: 0, removed: 0 });
  });

  test("random edits: hunks rebuild the new text and the script is minimal", () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let round = 0; round < 300; round++) {
      const old = Array.from({ length: random(30) }, () => `l${random(6)}`);
      const next = old.filter(() => random(4) !== 0);
      for (let i = random(6); i > 0; i--) next.splice(random(next.length + 1), 0, `l${random(8)}`);
      const diff = diffText("f", old.map((l) => `${l}\n`).join(""), next.map((l) => `${l}\n`).join(""));
      expect(applyHunks(old, diff.hunks)).toEqual(next);
      const common = lcsLength(old, next);
      expect(diff.removed).toBe(old.length - common);
      expect(diff.added).toBe(next.length - common);
    }
  });

  test("a very different large file still diffs correctly (replaced wholesale)", () => {
    const before = lines(5000, "old");
    const after = lines(5000, "new");
    const diff = diffText("big", before, after);
    expect(diff).toMatchObject({ added: 5000, removed: 5000 });
    const old = before.split("\n").slice(0, -1);
    expect(applyHunks(old, diff.hunks)).toEqual(after.split("\n").slice(0, -1));
  });
});
