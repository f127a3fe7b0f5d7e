import { describe, expect, test } from "vitest";
import { hunkLines, patchPreviewView } from "./diff-lines.js";

const running = (args: string) => ({ name: "apply_patch", status: "running", arguments: args });
/** The JSON text of `{"patch": ...}` without its end, as the model writes it. */
const opening = (patch: string) => JSON.stringify({ patch }).slice(0, -2);

describe("the chat view's diff lines", () => {
  test("an applied hunk: a numbered header, then signed lines classed by kind", () => {
    expect(
      hunkLines({
        oldStart: 3,
        oldLines: 2,
        newStart: 3,
        newLines: 2,
        lines: [
          { kind: "context", text: "keep" },
          { kind: "remove", text: "old" },
          { kind: "add", text: "new" },
        ],
      }),
    ).toEqual([
      { className: "hunk-head", text: "@@ -3,2 +3,2 @@" },
      { className: "line context", text: " keep" },
      { className: "line remove", text: "-old" },
      { className: "line add", text: "+new" },
    ]);
  });

  test("a patch being written: its files and lines so far, the line being typed held back", () => {
    const patch =
      "*** Begin Patch\n*** Update File: src/a.ts\n*** Move to: src/b.ts\n@@ function f() {\n-  return 1;\n+  return 2;\n+  // half a li";
    expect(patchPreviewView(running(opening(patch)))).toEqual({
      status: "writing",
      truncated: false,
      files: [
        {
          label: "src/a.ts → src/b.ts",
          kind: "move",
          added: 1,
          removed: 1,
          hunks: [
            [
              { className: "hunk-head", text: "@@ function f() {" },
              { className: "line remove", text: "-  return 1;" },
              { className: "line add", text: "+  return 2;" },
            ],
          ],
        },
      ],
    });
  });

  test("grows as deltas arrive; once the patch text is whole it is being applied", () => {
    const patch = "*** Begin Patch\n*** Add File: n.ts\n+one\n+two\n*** End Patch\n";
    const json = JSON.stringify({ patch });
    const added = (args: string) => patchPreviewView(running(args))?.files[0]?.added ?? 0;
    expect(added(json.slice(0, json.indexOf("+one")))).toBe(0);
    expect(added(json.slice(0, json.indexOf("+two")))).toBe(1);
    expect(added(json)).toBe(2);
    expect(patchPreviewView(running(json))?.status).toBe("applying");
  });

  test("no preview for another tool, a finished call, or before the patch text starts", () => {
    const args = opening("*** Begin Patch\n*** Delete File: a\n");
    expect(patchPreviewView({ ...running(args), status: "completed" })).toBeNull();
    expect(patchPreviewView({ ...running(args), name: "read_file" })).toBeNull();
    expect(patchPreviewView(running('{"pat'))).toBeNull();
  });
});
