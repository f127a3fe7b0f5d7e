import { describe, expect, test } from "vitest";
import { previewPatch } from "../../client-core/streaming-patch.js";
import type { FileDiff } from "../../protocol/agent.js";
import { diagnosticRows, diffRows, outputRows, previewRows } from "./display-rows.js";

const FILE: FileDiff = {
  path: "src/a.ts",
  kind: "update",
  added: 1,
  removed: 1,
  hunks: [
    {
      oldStart: 1,
      oldLines: 2,
      newStart: 1,
      newLines: 2,
      lines: [
        { kind: "context", text: "\tkeep" },
        { kind: "remove", text: "old" },
        { kind: "add", text: "new" },
      ],
    },
  ],
};

describe("diffRows", () => {
  test("a file header, hunk headers and signed lines, tabs expanded", () => {
    expect(diffRows([FILE])).toEqual([
      { kind: "file", path: "src/a.ts", added: 1, removed: 1, label: "" },
      { kind: "hunk", text: "@@ -1,2 +1,2 @@" },
      { kind: "context", text: "     keep" },
      { kind: "remove", text: "-old" },
      { kind: "add", text: "+new" },
    ]);
  });

  test("summarises what lies past the limit", () => {
    const rows = diffRows([FILE, { ...FILE, path: "b.ts", kind: "add" }], { maxLines: 3 });
    expect(rows.at(-1)).toEqual({ kind: "omitted", text: "... 5 more diff lines" });
    expect(rows.filter((row) => row.kind === "file").map((row) => row.kind === "file" && row.label)).toEqual([
      "",
      "new file",
    ]);
  });
});

describe("previewRows", () => {
  const preview = previewPatch(
    JSON.stringify({
      patch:
        "*** Begin Patch\n*** Update File: a.ts\n*** Move to: b.ts\n@@ f()\n \tkeep\n-old\n+new\n*** Delete File: c.ts\n",
    }),
  )!;

  test("the patch so far as diff rows: the @@ lines as written, no line numbers", () => {
    expect(previewRows(preview)).toEqual([
      { kind: "file", path: "b.ts", added: 1, removed: 1, label: "moved from a.ts" },
      { kind: "hunk", text: "@@ f()" },
      { kind: "context", text: "     keep" },
      { kind: "remove", text: "-old" },
      { kind: "add", text: "+new" },
      { kind: "file", path: "c.ts", added: 0, removed: 0, label: "deleted" },
    ]);
  });

  test("only the end, where the model writes, after a count of the rows above", () => {
    expect(previewRows(preview, { maxRows: 3 })).toEqual([
      { kind: "omitted", text: "... 4 lines above" },
      { kind: "add", text: "+new" },
      { kind: "file", path: "c.ts", added: 0, removed: 0, label: "deleted" },
    ]);
  });
});

describe("outputRows", () => {
  test("short output whole; long output as its first and last lines", () => {
    expect(outputRows("a\nb\n")).toEqual([
      { kind: "output", text: "a" },
      { kind: "output", text: "b" },
    ]);
    expect(outputRows("")).toEqual([]);
    const long = Array.from({ length: 50 }, (_, i) => `line ${i}`).join("\n");
    expect(outputRows(long).map((row) => (row.kind === "file" ? "" : row.text))).toEqual([
      "line 0",
      "line 1",
      "line 2",
      "... 44 more lines",
      "line 47",
      "line 48",
      "line 49",
    ]);
  });
});

describe("diagnosticRows", () => {
  test("under a diff: each error the edit introduced as path:line:col, then each notice dimmed", () => {
    expect(
      diagnosticRows({
        kind: "diff",
        files: [FILE],
        diagnostics: [{ path: "src/a.ts", line: 2, column: 7, message: "Cannot find name 'nw'. (2304)" }],
        diagnosticsNotices: [
          "Diagnostics: pyright is still starting; errors will be reported after later edits.",
        ],
      }),
    ).toEqual([
      { kind: "output", text: "error src/a.ts:2:7: Cannot find name 'nw'. (2304)" },
      {
        kind: "omitted",
        text: "Diagnostics: pyright is still starting; errors will be reported after later edits.",
      },
    ]);
    expect(diagnosticRows({ kind: "diff", files: [FILE] })).toEqual([]);
  });
});
