import { beforeAll, describe, expect, test } from "vitest";
import { fenceOpenAfter, loadHighlighter, type Span, styleAgentText } from "./agent-markdown.js";

beforeAll(() => loadHighlighter());

/** Each line as text, with `*bold*`, `_italic_` and `<cyan>` marks where the terminal styles it. */
function show(lines: Span[][]): string[] {
  return lines.map((spans) =>
    spans
      .map(({ text, style }) => {
        if (style?.bold) return `*${text}*`;
        if (style?.italic) return `_${text}_`;
        if (style?.color === "cyan") return `<${text}>`;
        if (style?.dimColor) return `~${text}~`;
        return text;
      })
      .join(""),
  );
}

describe("styleAgentText", () => {
  test("headings, inline code, bold, emphasis; code blocks highlighted between dimmed fences", () => {
    const lines = styleAgentText(
      "# Title\nUse `npm test` **now**, *then* go.\n```js\nconst `x` = **1**;\n```",
      null,
    );
    expect(show(lines)).toEqual([
      "*Title*",
      "",
      "Use <npm test> *now*, _then_ go.",
      "",
      "~```js~",
      "const `x` = **1**;",
      "~```~",
    ]);
    const code = lines[5]!;
    expect(code.find((span) => span.text === "const")?.style).toEqual({ color: "magenta" });
  });

  test("lists, quotes, rules; raw HTML as text; a safe link shows its target, an unsafe one only its text", () => {
    const text = [
      "1. one",
      "2. two",
      "   - nested",
      "",
      "> quoted",
      "",
      "---",
      "",
      "<b>bold?</b> [docs](https://d.dev) [x](javascript:alert(1))",
    ].join("\n");
    expect(show(styleAgentText(text, null))).toEqual([
      "1. one",
      "2. two",
      "   - nested",
      "",
      "~│ ~quoted",
      "",
      `~${"─".repeat(40)}~`,
      "",
      "<b>bold?</b> docs~ (https://d.dev)~ x",
    ]);
  });

  test("a chunk that starts inside a code block continues it: no second fence line, same language", () => {
    const lines = styleAgentText("  return a;\n}\n```\nafter **this**", "```ts");
    expect(show(lines)).toEqual(["  return a;", "}", "~```~", "", "after *this*"]);
    expect(lines[0]!.find((span) => span.text === "return")?.style).toEqual({ color: "magenta" });
    expect(show(styleAgentText("\n\nnext", null))).toEqual(["", "", "next"]);
  });

  test("the fence a chunk leaves open, for the next chunk", () => {
    expect(fenceOpenAfter("x\n```ts\ny", null)).toBe("```ts");
    expect(fenceOpenAfter("more\n", "```ts")).toBe("```ts");
    expect(fenceOpenAfter("y\n```\nafter", "```ts")).toBeNull();
    expect(fenceOpenAfter("- item\n\n  ~~~sh\n  ls", null)).toBe("~~~sh");
    expect(fenceOpenAfter("plain text", null)).toBeNull();
  });
});
