import { describe, expect, test } from "vitest";
import { parsePatch } from "./patch-parser.js";
import { ToolError } from "./tool-error.js";

const patch = (...lines: string[]) => lines.join("\n");

function parseErrorOf(text: string): string {
  try {
    parsePatch(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).code).toBe("invalid_arguments");
    return (error as ToolError).message;
  }
  throw new Error("expected a parse error");
}

describe("parsePatch", () => {
  test("every operation", () => {
    const parsed = parsePatch(
      patch(
        "*** Begin Patch",
        "*** Add File: src/new.ts",
        "+export const a = 1;",
        "+",
        "*** Delete File: src/old.ts",
        "*** Update File: src/app.ts",
        "*** Move to: src/main.ts",
        "@@ function start() {",
        "   const port = 8080;",
        "-  listen(port);",
        "+  listen(port, host);",
        "@@",
        " tail",
        "+more",
        "*** End of File",
        "*** End Patch",
      ),
    );
    expect(parsed.operations).toEqual([
      { kind: "add", path: "src/new.ts", lines: ["export const a = 1;", ""], line: 2 },
      { kind: "delete", path: "src/old.ts", line: 5 },
      {
        kind: "update",
        path: "src/app.ts",
        moveTo: "src/main.ts",
        line: 6,
        hunks: [
          {
            anchors: ["function start() {"],
            line: 8,
            endOfFile: false,
            lines: [
              { op: " ", text: "  const port = 8080;" },
              { op: "-", text: "  listen(port);" },
              { op: "+", text: "  listen(port, host);" },
            ],
          },
          {
            anchors: [],
            line: 12,
            endOfFile: true,
            lines: [
              { op: " ", text: "tail" },
              { op: "+", text: "more" },
            ],
          },
        ],
      },
    ]);
  });

  test("lenient forms models produce", () => {
    const parsed = parsePatch(
      [
        "apply_patch <<'EOF'",
        "*** Begin Patch",
        "*** Update File: a.ts",
        // The first hunk may omit "@@"; a blank line is empty context.
        " one",
        "",
        "-two",
        "+2",
        "@@ -10,4 +10,4 @@ class Foo",
        "@@   method() {",
        "-x",
        "+y",
        "",
        "*** Move to: b.ts",
      ]
        .join("\r\n")
        .replace("*** Move to: b.ts", "*** End Patch\r\nEOF\r\n"),
    );
    const [update] = parsed.operations;
    expect(update).toMatchObject({ kind: "update", path: "a.ts", moveTo: null });
    if (update?.kind !== "update") throw new Error("expected an update");
    expect(update.hunks[0]!.lines).toEqual([
      { op: " ", text: "one" },
      { op: " ", text: "" },
      { op: "-", text: "two" },
      { op: "+", text: "2" },
    ]);
    // Consecutive "@@" lines narrow one hunk; unified-diff numbers are ignored; the trailing blank is spacing.
    expect(update.hunks[1]).toMatchObject({
      anchors: ["class Foo", "method() {"],
      lines: [
        { op: "-", text: "x" },
        { op: "+", text: "y" },
      ],
    });
  });

  test("an Update File with only a Move to is a rename", () => {
    const parsed = parsePatch(
      patch("*** Begin Patch", "*** Update File: a", "*** Move to: b", "*** End Patch"),
    );
    expect(parsed.operations).toEqual([{ kind: "update", path: "a", moveTo: "b", hunks: [], line: 2 }]);
  });

  test("an empty Add File makes an empty file", () => {
    const parsed = parsePatch(patch("*** Begin Patch", "*** Add File: empty.txt", "*** End Patch"));
    expect(parsed.operations).toEqual([{ kind: "add", path: "empty.txt", lines: [], line: 2 }]);
  });

  test.each([
    ["a missing Begin Patch", patch("*** Update File: a", "*** End Patch"), 1, "must start with"],
    ["a missing End Patch", patch("*** Begin Patch", "*** Delete File: a"), 2, "must end with"],
    ["an unknown header", patch("*** Begin Patch", "*** Rename File: a", "*** End Patch"), 2, "expected"],
    [
      "an Add File line without +",
      patch("*** Begin Patch", "*** Add File: a", "+ok", "oops", "*** End Patch"),
      4,
      'must start with "+"',
    ],
    [
      "a hunk line without a prefix",
      patch("*** Begin Patch", "*** Update File: a", "@@", " ctx", "bad line", "*** End Patch"),
      5,
      "expected a hunk line",
    ],
    [
      "an Update File without hunks",
      patch("*** Begin Patch", "*** Update File: a", "*** Delete File: b", "*** End Patch"),
      2,
      "has no hunks",
    ],
    [
      "a hunk that changes nothing",
      patch("*** Begin Patch", "*** Update File: a", "@@ x", " same", "*** End Patch"),
      3,
      'no "-" or "+" lines',
    ],
    [
      "a file named twice",
      patch("*** Begin Patch", "*** Delete File: a", "*** Add File: a", "+x", "*** End Patch"),
      3,
      "already changed at line 2",
    ],
    [
      "a header without a path",
      patch("*** Begin Patch", "*** Delete File: ", "*** End Patch"),
      2,
      "needs a path",
    ],
    ["no operations", patch("*** Begin Patch", "*** End Patch"), 1, "changes no files"],
    [
      "End of File outside a hunk",
      patch("*** Begin Patch", "*** Update File: a", "*** End of File", "*** End Patch"),
      3,
      "must end a hunk",
    ],
  ])("%s is an error naming its line", (_name, text, line, message) => {
    const error = parseErrorOf(text);
    expect(error).toContain(`line ${line}:`);
    expect(error).toContain(message);
  });
});
