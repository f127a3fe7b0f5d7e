import { describe, expect, test } from "vitest";
import { splitRows } from "./diff-view.js";
import { highlight } from "./highlight.js";
import { parseInline, parseMarkdown } from "./markdown-parse.js";

describe("markdown", () => {
  test("blocks: headings, lists, quotes, rules, fenced code (open while streaming)", () => {
    const blocks = parseMarkdown(
      "# Title\n\nSome *text*\nmore\n\n- a\n- b\n1. one\n> q\n---\n```ts\nconst a = 1;\n",
    );
    expect(blocks.map((b) => b.kind)).toEqual([
      "heading",
      "paragraph",
      "list",
      "list",
      "quote",
      "rule",
      "code",
    ]);
    expect(blocks.at(-1)).toEqual({
      kind: "code",
      line: 10,
      language: "ts",
      text: "const a = 1;",
      open: true,
    });
    expect(blocks.map((b) => b.line)).toEqual([0, 2, 5, 7, 8, 9, 10]);
    expect(parseMarkdown("```\nx\n```").at(0)).toMatchObject({ open: false, text: "x" });
  });

  test("inline: code, strong, emphasis and only http(s) links", () => {
    expect(parseInline("a `b*c*` **d** *e* [f](https://x.dev) [g](javascript:alert(1))")).toEqual([
      { kind: "text", at: 0, text: "a " },
      { kind: "code", at: 2, text: "b*c*" },
      { kind: "text", at: 8, text: " " },
      { kind: "strong", at: 9, children: [{ kind: "text", at: 11, text: "d" }] },
      { kind: "text", at: 14, text: " " },
      { kind: "em", at: 15, children: [{ kind: "text", at: 16, text: "e" }] },
      { kind: "text", at: 18, text: " " },
      { kind: "link", at: 19, href: "https://x.dev", children: [{ kind: "text", at: 20, text: "f" }] },
      { kind: "text", at: 37, text: " [g](javascript:alert(1))" },
    ]);
  });

  test("highlighting keeps every character and finds the common tokens", () => {
    const code = 'const x = "a // b"; // note\nreturn 42;';
    const tokens = highlight(code, "ts");
    expect(tokens.map((t) => t.text).join("")).toBe(code);
    expect(tokens.filter((t) => t.kind !== "plain").map((t) => [t.kind, t.text])).toEqual([
      ["keyword", "const"],
      ["string", '"a // b"'],
      ["comment", "// note"],
      ["keyword", "return"],
      ["number", "42"],
    ]);
    expect(highlight("# c\nx = 'y'", "python").map((t) => t.kind)).toEqual(["comment", "plain", "string"]);
  });

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
