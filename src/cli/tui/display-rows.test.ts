import { describe, expect, test } from "vitest";
import type { FileDiff } from "../../protocol/agent.js";
import { diffRows, outputRows } from "./display-rows.js";

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
