import { describe, expect, test } from "vitest";
import { splitRows } from "./diff-view.js";

describe("diff view", () => {
  test("a side-by-side diff pairs removed lines with the added lines after them", () => {
    const rows = splitRows({
      oldStart: 1,
      oldLines: 3,
      newStart: 1,
      newLines: 2,
      lines: [
        { kind: "context", text: "a" },
        { kind: "remove", text: "b" },
        { kind: "remove", text: "c" },
        { kind: "add", text: "B" },
      ],
    });
    expect(
      rows.map(([l, r]) => [l ? `${l.no}${l.line.text}` : null, r ? `${r.no}${r.line.text}` : null]),
    ).toEqual([
      ["1a", "1a"],
      ["2b", "2B"],
      ["3c", null],
    ]);
  });
});
