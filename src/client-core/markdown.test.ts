import { describe, expect, test } from "vitest";
import { parseMarkdown } from "./markdown.js";
import { MarkdownStream } from "./markdown-stream.js";

const text = (value: string) => ({ kind: "text", text: value });

describe("parseMarkdown", () => {
  test("blocks: headings, lists, quotes, rules, tables and fenced code", () => {
    const blocks = parseMarkdown(
      [
        "# Title",
        "",
        "Some *text*",
        "more",
        "",
        "- a",
        "- b",
        "",
        "3. three",
        "4. four",
        "",
        "> q",
        "",
        "---",
        "",
        "| a | b |",
        "|:--|--:|",
        "| 1 | 2 |",
        "",
        "```ts",
        "const a = 1;",
        "```",
      ].join("\n"),
    );
    expect(blocks.map((b) => b.kind)).toEqual([
      "heading",
      "paragraph",
      "list",
      "list",
      "quote",
      "rule",
      "table",
      "code",
    ]);
    expect(blocks[0]).toEqual({ kind: "heading", level: 1, inline: [text("Title")] });
    expect(blocks[1]).toEqual({
      kind: "paragraph",
      inline: [text("Some "), { kind: "em", children: [text("text")] }, text("\nmore")],
    });
    expect(blocks[2]).toEqual({
      kind: "list",
      ordered: false,
      start: 1,
      items: [
        { checked: null, blocks: [{ kind: "text", inline: [text("a")] }] },
        { checked: null, blocks: [{ kind: "text", inline: [text("b")] }] },
      ],
    });
    expect(blocks[3]).toMatchObject({ kind: "list", ordered: true, start: 3 });
    expect(blocks[4]).toEqual({ kind: "quote", blocks: [{ kind: "paragraph", inline: [text("q")] }] });
    expect(blocks[6]).toEqual({
      kind: "table",
      align: ["left", "right"],
      header: [[text("a")], [text("b")]],
      rows: [[[text("1")], [text("2")]]],
    });
    expect(blocks[7]).toEqual({
      kind: "code",
      language: "ts",
      text: "const a = 1;",
      fence: "```ts",
      open: false,
    });
  });

  test("a fence not yet closed is an open code block to the end; a longer fence needs a longer close", () => {
    expect(parseMarkdown("Code:\n\n```py\nx = 1\n\ny = 2\n").at(-1)).toEqual({
      kind: "code",
      language: "py",
      text: "x = 1\n\ny = 2",
      fence: "```py",
      open: true,
    });
    expect(parseMarkdown("````\n```\nstill code").at(0)).toMatchObject({
      text: "```\nstill code",
      open: true,
    });
    expect(parseMarkdown("~~~\nx\n~~~").at(0)).toMatchObject({ text: "x", open: false });
    expect(parseMarkdown("```").at(0)).toMatchObject({ kind: "code", text: "", open: true });
    expect(parseMarkdown("    indented\n").at(0)).toMatchObject({
      kind: "code",
      text: "indented",
      fence: "",
      open: false,
    });
  });

  test("inline: code, strong, emphasis, strikethrough, line breaks", () => {
    const [block] = parseMarkdown("a `b*c*` **d** *e* _f_ ~~g~~ h  \ni");
    expect(block).toEqual({
      kind: "paragraph",
      inline: [
        text("a "),
        { kind: "code", text: "b*c*" },
        text(" "),
        { kind: "strong", children: [text("d")] },
        text(" "),
        { kind: "em", children: [text("e")] },
        text(" "),
        { kind: "em", children: [text("f")] },
        text(" "),
        { kind: "del", children: [text("g")] },
        text(" h"),
        { kind: "break" },
        text("i"),
      ],
    });
  });

  test("links keep only http(s) and mailto targets; other schemes are left as their text", () => {
    const [block] = parseMarkdown(
      "[f](https://x.dev) [g](javascript:alert(1)) [h](data:text/html,x) [m](mailto:a@b.c) <https://y.dev> www.z.dev [r](./local)",
    );
    expect(block).toEqual({
      kind: "paragraph",
      inline: [
        { kind: "link", href: "https://x.dev", children: [text("f")] },
        text(" g h "),
        { kind: "link", href: "mailto:a@b.c", children: [text("m")] },
        text(" "),
        { kind: "link", href: "https://y.dev", children: [text("https://y.dev")] },
        text(" "),
        { kind: "link", href: "http://www.z.dev", children: [text("www.z.dev")] },
        text(" r"),
      ],
    });
    // An image is never loaded: a link to it at most.
    expect(parseMarkdown("![alt](https://i.dev/a.png) ![x](javascript:1)")[0]).toEqual({
      kind: "paragraph",
      inline: [{ kind: "link", href: "https://i.dev/a.png", children: [text("alt")] }, text(" x")],
    });
  });

  test("raw HTML is text, inline and as a block; character references are resolved in text only", () => {
    expect(
      parseMarkdown("<script>alert(1)</script>\n\nhi <b onclick=x>there</b> &lt;div&gt; `&amp;`"),
    ).toEqual([
      { kind: "paragraph", inline: [text("<script>alert(1)</script>")] },
      {
        kind: "paragraph",
        inline: [text("hi <b onclick=x>there</b> <div> "), { kind: "code", text: "&amp;" }],
      },
    ]);
  });

  test("task lists carry their boxes", () => {
    const [list] = parseMarkdown("- [x] done\n- [ ] todo\n");
    expect(list).toMatchObject({ items: [{ checked: true }, { checked: false }] });
  });
});

/** Markdown an agent writes, with the constructs whose ends the stream must find right. */
const SAMPLES = [
  [
    "# Plan",
    "",
    "Here is the **plan**, with `parseRow` fixed:",
    "",
    "1. Read the file",
    "2. Patch it",
    "",
    "   with a second paragraph",
    "",
    "3. Test",
    "",
    "```ts",
    "// keep the last field",
    "export function parseRow(line: string): string[] {",
    "",
    '  return line.split(",").map((field) => field.trim());',
    "}",
    "```",
    "",
    "> Note: a *quote*",
    "> on two lines",
    "",
    "| col | other |",
    "|-----|-------|",
    "| 1   | 2     |",
    "",
    "Done.",
  ].join("\n"),
  [
    "Setext heading",
    "==============",
    "",
    "- a",
    "",
    "- b",
    "  - nested",
    "",
    "    indented code in the item",
    "",
    "after the list",
    "",
    "<div>",
    "raw *html*",
    "",
    "</div>",
    "",
    "~~~",
    "tilde",
    "",
    "~~~",
    "",
    "    indented code",
    "",
    "Text with a [ref] link and an *emphasis",
    "spanning* lines.",
    "",
    "[ref]: https://example.com",
    "",
    "***",
    "",
    "End.",
  ].join("\n"),
  "One\r\n\r\nTwo lines\r\nof text\r\n\r\n```\r\ncode\r\n```\r\n\r\n- x\r\n",
  [
    "> a quote",
    "continued lazily",
    "",
    "> [q]: https://q.dev",
    "",
    "- [ ] task",
    "- [x] done",
    "",
    "  indented paragraph of the item",
    "",
    "1) paren list",
    "10) ten",
    "",
    "Text",
    "***",
    "Setext two",
    "---",
    "",
    "See [q] and <b>tags</b> &amp; `code`",
    "",
    "```",
    "unclosed at the end",
  ].join("\n"),
];

/** Cuts `text` into pieces of 1 to 12 characters, as a model's tokens arrive (seeded, repeatable). */
function pieces(text: string, seed: number): string[] {
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    return state;
  };
  const out: string[] = [];
  for (let at = 0; at < text.length; ) {
    const size = 1 + (next() % 12);
    out.push(text.slice(at, at + size));
    at += size;
  }
  return out;
}

describe("MarkdownStream", () => {
  test("after every piece of a streamed answer, the blocks equal a parse of the whole text so far", () => {
    for (const [index, sample] of SAMPLES.entries()) {
      for (let seed = 1; seed <= 8; seed++) {
        const stream = new MarkdownStream();
        let so = "";
        for (const piece of pieces(sample, seed)) {
          so += piece;
          expect(stream.update(so), `sample ${index}, seed ${seed}, at ${so.length}`).toEqual(
            parseMarkdown(so),
          );
        }
      }
    }
  });

  test("finished blocks keep their objects; only the open tail is new", () => {
    const stream = new MarkdownStream();
    const first = stream.update("# Title\n\nA paragraph.\n\nAnother one,\nstill");
    const second = stream.update("# Title\n\nA paragraph.\n\nAnother one,\nstill streaming");
    expect(second[0]).toBe(first[0]);
    expect(second[1]).toBe(first[1]);
    expect(second[2]).not.toBe(first[2]);
    expect(stream.update("# Title\n\nA paragraph.\n\nAnother one,\nstill streaming")).toBe(second);
    // Until the next block's first line is whole, the block before it may still go on ("3" -> "3. c").
    const list = stream.update("1. a\n2. b\n\n3");
    expect(stream.update("1. a\n2. b\n\n3. c")).toEqual([
      { kind: "list", ordered: true, start: 1, items: expect.any(Array) },
    ]);
    expect(list).toHaveLength(2);
  });

  test("a code fence holds its blank lines: nothing after its opening is final until it closes", () => {
    const stream = new MarkdownStream();
    const open = stream.update("Intro\n\n```py\na = 1\n\n\nb = 2\n");
    expect(open.at(-1)).toMatchObject({ kind: "code", text: "a = 1\n\n\nb = 2", open: true });
    const closed = stream.update("Intro\n\n```py\na = 1\n\n\nb = 2\n```\n\nAfter.");
    expect(closed[0]).toBe(open[0]);
    expect(closed.map((b) => b.kind)).toEqual(["paragraph", "code", "paragraph"]);
    expect(closed[1]).toMatchObject({ open: false });
  });

  test("a link defined late still links the text before it; a text that is not a continuation starts over", () => {
    const stream = new MarkdownStream();
    stream.update("See [docs].\n\nMore text.\n\n");
    expect(stream.update("See [docs].\n\nMore text.\n\n[docs]: https://d.dev\n")[0]).toEqual({
      kind: "paragraph",
      inline: [text("See "), { kind: "link", href: "https://d.dev", children: [text("docs")] }, text(".")],
    });
    expect(stream.update("Something else\n\nentirely")).toEqual(parseMarkdown("Something else\n\nentirely"));
  });
});
