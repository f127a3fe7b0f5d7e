import { describe, expect, test } from "vitest";
import { applyPatchTool } from "../agent/tools/apply-patch.js";
import { parsePatch } from "../agent/tools/patch-parser.js";
import {
  APPLY_PATCH_TOOL,
  PATCH_PREVIEW_MAX_CHARS,
  type PatchPreviewFile,
  partialJsonStringField,
  patchPreviewOf,
  previewPatch,
  previewPatchText,
} from "./streaming-patch.js";

const patch = (...lines: string[]) => lines.join("\n");
const args = (text: string) => JSON.stringify({ patch: text });

/** Every prefix of `text`, as the deltas of a stream would leave it. */
function prefixes(text: string): string[] {
  return Array.from({ length: text.length + 1 }, (_, end) => text.slice(0, end));
}

describe("partialJsonStringField", () => {
  test("escapes cut mid-way are held back, never shown as backslashes", () => {
    expect(partialJsonStringField('{"patch": "a\\', "patch")).toEqual({ text: "a", complete: false });
    expect(partialJsonStringField('{"patch": "a\\n', "patch")).toEqual({ text: "a\n", complete: false });
    expect(partialJsonStringField('{"patch": "a\\u00', "patch")).toEqual({ text: "a", complete: false });
    expect(partialJsonStringField('{"patch": "a\\u00e9', "patch")).toEqual({ text: "aé", complete: false });
    expect(partialJsonStringField('{"patch": "\\"q\\" \\\\ \\/ \\t"}', "patch")).toEqual({
      text: '"q" \\ / \t',
      complete: true,
    });
  });

  test("a surrogate pair cut between its halves waits for the low half", () => {
    const json = '{"patch": "x\\ud83d\\ude00y"}';
    for (const end of [17, 18, 20, 23])
      expect(partialJsonStringField(json.slice(0, end), "patch")).toEqual({ text: "x", complete: false });
    expect(partialJsonStringField(json.slice(0, 24), "patch")).toEqual({ text: "x😀", complete: false });
    // A lone high surrogate followed by other text is what JSON.parse gives too.
    expect(partialJsonStringField('{"patch": "\\ud83dab"}', "patch")?.text).toBe(JSON.parse('"\\ud83dab"'));
    // Raw (unescaped) text cut inside a character: its first half is held back.
    expect(partialJsonStringField(`{"patch": "x${"😀".slice(0, 1)}`, "patch")).toEqual({
      text: "x",
      complete: false,
    });
  });

  test("every prefix of an encoded text decodes to a prefix of it, whole only at the end", () => {
    const text = 'héllo "wörld"\n\ttab \\ slash / 😀 中文 \u0001 end';
    // Both encodings: JSON.stringify keeps non-ASCII raw; the escaped one writes \uXXXX for it.
    const escaped = JSON.stringify({ patch: text }).replace(
      /[\u007f-\uffff]/g,
      (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
    for (const json of [JSON.stringify({ patch: text }), escaped]) {
      let previous = "";
      for (const prefix of prefixes(json)) {
        const decoded = partialJsonStringField(prefix, "patch");
        if (!decoded) {
          expect(previous).toBe("");
          continue;
        }
        expect(text.startsWith(decoded.text)).toBe(true);
        expect(decoded.text.length).toBeGreaterThanOrEqual(previous.length);
        expect(/[\ud800-\udbff]$/.test(decoded.text)).toBe(false);
        expect(decoded.complete).toBe(prefix.length >= json.length - 1);
        previous = decoded.text;
      }
      expect(previous).toBe(text);
    }
  });

  test("other fields before it are skipped, whatever their values", () => {
    const json = '{"x": [1, {"y": "}\\""}], "n": null, "t": true, "patch": "ab';
    expect(partialJsonStringField(json, "patch")).toEqual({ text: "ab", complete: false });
    expect(partialJsonStringField('{"x": [1, {"y": "}', "patch")).toBeNull();
  });

  test("null until the field's string begins, and for text that is not an object with a string field", () => {
    for (const json of ["", "  ", "{", '{"pat', '{"patch"', '{"patch" :', '{"patch": '])
      expect(partialJsonStringField(json, "patch")).toBeNull();
    expect(partialJsonStringField('{"patch": "', "patch")).toEqual({ text: "", complete: false });
    expect(partialJsonStringField("*** Begin Patch", "patch")).toBeNull();
    expect(partialJsonStringField('["patch", "x"]', "patch")).toBeNull();
    expect(partialJsonStringField('{"patch": 12}', "patch")).toBeNull();
    expect(partialJsonStringField('{"other": "x"}', "patch")).toBeNull();
  });

  test("decoding stops at an invalid escape", () => {
    expect(partialJsonStringField('{"patch": "ab\\x41cd"}', "patch")).toEqual({
      text: "ab",
      complete: false,
    });
    expect(partialJsonStringField('{"patch": "ab\\uZZZZcd"}', "patch")).toEqual({
      text: "ab",
      complete: false,
    });
  });
});

const everyOperation = patch(
  "*** Begin Patch",
  "*** Add File: src/new.ts",
  "+export const a = 1;",
  "+",
  "",
  "*** Delete File: src/old.ts",
  "*** Update File: src/app.ts",
  "*** Move to: src/main.ts",
  "@@ class App",
  "@@ function start() {",
  "   const port = 8080;",
  "-  listen(port);",
  "+  listen(port, host);",
  "",
  " ",
  "@@",
  " tail",
  "+more",
  "*** End of File",
  "+after",
  "",
  "*** End Patch",
);

describe("previewPatchText", () => {
  test("files, kinds, hunks and line kinds of every operation", () => {
    expect(previewPatchText(everyOperation)).toEqual([
      {
        path: "src/new.ts",
        kind: "add",
        hunks: [
          {
            header: "@@",
            lines: [
              { kind: "add", text: "export const a = 1;" },
              { kind: "add", text: "" },
            ],
          },
        ],
        added: 2,
        removed: 0,
      },
      { path: "src/old.ts", kind: "delete", hunks: [], added: 0, removed: 0 },
      {
        path: "src/main.ts",
        kind: "move",
        from: "src/app.ts",
        hunks: [
          {
            header: "@@ class App function start() {",
            lines: [
              { kind: "context", text: "  const port = 8080;" },
              { kind: "remove", text: "  listen(port);" },
              { kind: "add", text: "  listen(port, host);" },
              // A blank line followed by more of the hunk is context.
              { kind: "context", text: "" },
              { kind: "context", text: "" },
            ],
          },
          {
            header: "@@",
            lines: [
              { kind: "context", text: "tail" },
              { kind: "add", text: "more" },
            ],
          },
          { header: "@@", lines: [{ kind: "add", text: "after" }] },
        ],
        added: 3,
        removed: 1,
      },
    ]);
  });

  test("agrees with the agent's patch parser on every line of a complete patch", () => {
    const classified = previewPatchText(everyOperation);
    const parsed = parsePatch(everyOperation).operations;
    expect(
      classified.map((file) => [file.from ?? file.path, file.kind === "move" ? "update" : file.kind]),
    ).toEqual(parsed.map((operation) => [operation.path, operation.kind]));
    const sign = { add: "+", remove: "-", context: " " } as const;
    for (const [index, operation] of parsed.entries()) {
      const file = classified[index]!;
      const lines = file.hunks.map((hunk) => hunk.lines.map((line) => `${sign[line.kind]}${line.text}`));
      if (operation.kind === "add") expect(lines.flat()).toEqual(operation.lines.map((line) => `+${line}`));
      if (operation.kind === "update") {
        expect(file.kind === "move" ? file.path : null).toBe(operation.moveTo);
        expect(lines).toEqual(
          operation.hunks.map((hunk) => hunk.lines.map((line) => `${line.op}${line.text}`)),
        );
      }
    }
  });

  test("a heredoc wrapper, text before the patch and after its end are not shown", () => {
    const files = previewPatchText(
      patch("apply_patch <<'EOF'", "*** Begin Patch", "*** Update File: a.ts", "-x", "*** End Patch", "EOF"),
    );
    expect(files).toEqual([
      {
        path: "a.ts",
        kind: "update",
        hunks: [{ header: "@@", lines: [{ kind: "remove", text: "x" }] }],
        added: 0,
        removed: 1,
      },
    ]);
  });

  test("a context line reading ' *** End Patch' is shown, as the tool applies it (the preview stopped there)", () => {
    const text = patch(
      "*** Begin Patch",
      "*** Update File: a.ts",
      "@@",
      " *** End Patch",
      "-x",
      "*** End Patch",
    );
    expect(previewPatchText(text)[0]?.hunks[0]?.lines).toEqual([
      { kind: "context", text: "*** End Patch" },
      { kind: "remove", text: "x" },
    ]);
    const parsed = parsePatch(text).operations[0];
    expect(parsed?.kind === "update" && parsed.hunks[0]?.lines).toEqual([
      { op: " ", text: "*** End Patch" },
      { op: "-", text: "x" },
    ]);
  });

  test("a line the parser would reject is shown as context, not dropped", () => {
    const files = previewPatchText(patch("*** Begin Patch", "*** Update File: a.ts", "@@", "oops", "+y"));
    expect(files[0]?.hunks[0]?.lines).toEqual([
      { kind: "context", text: "oops" },
      { kind: "add", text: "y" },
    ]);
  });
});

describe("previewPatch", () => {
  test("the line being written is held back until its newline arrives", () => {
    const json = '{"patch": "*** Begin Patch\\n*** Update File: a.ts\\n@@\\n-old\\n+ne';
    expect(previewPatch(json)).toEqual({
      files: [
        {
          path: "a.ts",
          kind: "update",
          hunks: [{ header: "@@", lines: [{ kind: "remove", text: "old" }] }],
          added: 0,
          removed: 1,
        },
      ],
      complete: false,
      truncated: false,
    });
    const lines = (preview: ReturnType<typeof previewPatch>) => preview?.files[0]?.hunks[0]?.lines;
    expect(lines(previewPatch(`${json}w\\n`))).toEqual([
      { kind: "remove", text: "old" },
      { kind: "add", text: "new" },
    ]);
    // A file header being typed is not yet a file.
    expect(previewPatch('{"patch": "*** Begin Patch\\n*** Update Fi')?.files).toEqual([]);
  });

  test("once the string closes, its last line is shown too", () => {
    const preview = previewPatch(args(patch("*** Begin Patch", "*** Add File: n.ts", "+one", "+two")));
    expect(preview?.complete).toBe(true);
    expect(preview?.files[0]?.added).toBe(2);
  });

  test("streamed delta by delta, the preview only grows and ends as the whole patch", () => {
    const json = args(everyOperation);
    const shown = (files: PatchPreviewFile[]) =>
      files.flatMap((file) => [
        `file ${file.from ?? file.path}`,
        ...file.hunks.flatMap((hunk) => hunk.lines.map((line) => `${line.kind} ${line.text}`)),
      ]);
    let previous: string[] = [];
    for (const prefix of prefixes(json)) {
      const files = previewPatch(prefix)?.files ?? [];
      const now = shown(files);
      expect(now.slice(0, previous.length)).toEqual(previous);
      previous = now;
    }
    expect(previewPatch(json)?.files).toEqual(previewPatchText(everyOperation));
  });

  test("arguments past the bound are not looked at, and say so", () => {
    // Each line is 7 characters of JSON: `+line\n`.
    const lines = Math.ceil(PATCH_PREVIEW_MAX_CHARS / 7);
    const body = `*** Begin Patch\n*** Add File: big.txt\n${"+line\n".repeat(lines + 10)}*** End Patch`;
    const preview = previewPatch(args(body));
    expect(preview?.truncated).toBe(true);
    expect(preview?.complete).toBe(false);
    expect(preview!.files[0]!.added).toBeLessThan(lines);
    expect(preview!.files[0]!.added).toBeGreaterThan(lines - 10);
  });
});

describe("patchPreviewOf", () => {
  const running = {
    name: "apply_patch",
    status: "running",
    arguments: args("*** Begin Patch\n*** Delete File: a\n"),
  };

  test("only a running apply_patch call has a preview", () => {
    expect(patchPreviewOf(running)?.files).toEqual([
      { path: "a", kind: "delete", hunks: [], added: 0, removed: 0 },
    ]);
    expect(patchPreviewOf({ ...running, status: "completed" })).toBeNull();
    expect(patchPreviewOf({ ...running, status: "failed" })).toBeNull();
    expect(patchPreviewOf({ ...running, name: "read_file" })).toBeNull();
    expect(patchPreviewOf({ ...running, arguments: "" })).toBeNull();
  });

  test("the tool and its argument are the agent's own", () => {
    expect(applyPatchTool.name).toBe(APPLY_PATCH_TOOL);
    expect(applyPatchTool.parameters).toMatchObject({
      properties: { patch: { type: "string" } },
      required: ["patch"],
    });
  });
});
