import type { CodeToken, CodeTokenKind } from "../../client-core/highlight.js";
import { type MarkdownBlock, type MarkdownInline, parseMarkdown } from "../../client-core/markdown.js";

/** How a run of agent text is drawn: Ink `<Text>` properties. */
export interface SpanStyle {
  bold?: boolean;
  italic?: boolean;
  underline?: boolean;
  strikethrough?: boolean;
  dimColor?: boolean;
  color?: string;
}

/** A run of agent text with the style the terminal gives it. */
export interface Span {
  text: string;
  style?: SpanStyle;
}

type Line = Span[];

/**
 * The highlighter, once loaded. Importing lowlight takes about 0.1 s (it loads every grammar
 * highlight.js has), so the terminal loads it when the first message is shown, not at start;
 * code shows plain until it is in.
 */
let highlight: ((code: string, language: string) => CodeToken[]) | null = null;
let loading: Promise<void> | null = null;

/** Starts loading the highlighter (once); resolves when code is highlighted, or stays plain for good. */
export function loadHighlighter(): Promise<void> {
  loading ??= import("../../client-core/highlight.js").then(
    (module) => {
      highlight = module.highlight;
    },
    () => {},
  );
  return loading;
}

const DIM: SpanStyle = { dimColor: true };
const CODE_COLOURS: Record<CodeTokenKind, SpanStyle | undefined> = {
  plain: undefined,
  keyword: { color: "magenta" },
  string: { color: "green" },
  number: { color: "yellow" },
  literal: { color: "yellow" },
  comment: { dimColor: true, italic: true },
  type: { color: "cyan" },
  title: { color: "blue" },
  attr: { color: "yellow" },
  meta: { color: "blue" },
  add: { color: "green" },
  remove: { color: "red" },
};

/**
 * Agent text as terminal lines, from the client core's Markdown tree: headings and **bold** in
 * bold, *emphasis* in italics, `inline code` in colour, code blocks highlighted between dimmed
 * fences. The terminal prints a message a few whole lines at a time, so `fence` is the open code
 * block's fence line ("```ts") when the text starts inside one, else null.
 */
export function styleAgentText(text: string, fence: string | null): Line[] {
  void loadHighlighter();
  const lines: Line[] = [];
  if (fence === null) {
    // Blank lines that part this chunk from the one before it.
    const blanks = /^(?:[ \t]*\n)*/.exec(text)![0].split("\n").length - 1;
    for (let i = 0; i < blanks; i++) lines.push([]);
  }
  const blocks = parseMarkdown(fence === null ? text : `${fence}\n${text}`);
  blocks.forEach((block, index) => {
    if (index > 0) lines.push([]);
    lines.push(...blockLines(block, index === 0 && fence !== null));
  });
  return lines;
}

/** The fence line of the code block open at the end of `text` (which starts in `fence`), or null. */
export function fenceOpenAfter(text: string, fence: string | null): string | null {
  // Without a fence line nothing opens or closes a code block (the store asks for each line).
  if (!text.includes("```") && !text.includes("~~~")) return fence;
  let block = parseMarkdown(fence === null ? text : `${fence}\n${text}`).at(-1);
  for (;;) {
    if (block?.kind === "list") block = block.items.at(-1)?.blocks.at(-1);
    else if (block?.kind === "quote") block = block.blocks.at(-1);
    else break;
  }
  return block?.kind === "code" && block.open && block.fence ? block.fence : null;
}

/** A block's lines; `continued`: a code block whose fence line was shown with an earlier chunk. */
function blockLines(block: MarkdownBlock, continued = false): Line[] {
  switch (block.kind) {
    case "heading":
      return inlineLines(block.inline, { bold: true });
    case "paragraph":
    case "text":
      return inlineLines(block.inline, {});
    case "code": {
      const lines: Line[] = [];
      if (block.fence && !continued) lines.push([{ text: block.fence, style: DIM }]);
      if (block.text !== "") lines.push(...codeLines(block.text, block.language));
      if (!block.open && block.fence) lines.push([{ text: /^(`+|~+)/.exec(block.fence)![0], style: DIM }]);
      return lines;
    }
    case "list":
      return block.items.flatMap((item, index) => {
        const marker = block.ordered ? `${block.start + index}. ` : "- ";
        const box = item.checked === null ? "" : item.checked ? "[x] " : "[ ] ";
        const lines = containerLines(item.blocks);
        const indent = " ".repeat(marker.length);
        return lines.length === 0
          ? [[{ text: marker + box }]]
          : lines.map((line, at) =>
              at === 0 ? [{ text: marker + box }, ...line] : line.length ? [{ text: indent }, ...line] : line,
            );
      });
    case "quote":
      return containerLines(block.blocks).map((line) => [{ text: "│ ", style: DIM }, ...line]);
    case "table":
      return tableLines(block);
    case "rule":
      return [[{ text: "─".repeat(40), style: DIM }]];
    default: {
      const unknown: never = block;
      return [[{ text: String(unknown) }]];
    }
  }
}

/** Blocks inside a list item or a quote: a blank line between them, but not after a tight item's text. */
function containerLines(blocks: readonly MarkdownBlock[]): Line[] {
  const lines: Line[] = [];
  blocks.forEach((block, index) => {
    if (index > 0 && blocks[index - 1]!.kind !== "text") lines.push([]);
    lines.push(...blockLines(block));
  });
  return lines;
}

function codeLines(code: string, language: string): Line[] {
  const lines: Line[] = [[]];
  for (const token of highlight ? highlight(code, language) : [{ kind: "plain" as const, text: code }]) {
    token.text.split("\n").forEach((part, index) => {
      if (index > 0) lines.push([]);
      if (part)
        lines
          .at(-1)!
          .push({ text: part, ...(CODE_COLOURS[token.kind] ? { style: CODE_COLOURS[token.kind] } : {}) });
    });
  }
  return lines;
}

/** Inline content as lines (a line break in the text starts a new one), each run styled. */
function inlineLines(inline: readonly MarkdownInline[], style: SpanStyle): Line[] {
  const lines: Line[] = [[]];
  const add = (text: string, own: SpanStyle) => {
    text.split("\n").forEach((part, index) => {
      if (index > 0) lines.push([]);
      if (part) lines.at(-1)!.push(Object.keys(own).length ? { text: part, style: own } : { text: part });
    });
  };
  const walk = (parts: readonly MarkdownInline[], own: SpanStyle) => {
    for (const part of parts) {
      switch (part.kind) {
        case "text":
          add(part.text, own);
          break;
        case "code":
          add(part.text, { ...own, color: "cyan" });
          break;
        case "strong":
          walk(part.children, { ...own, bold: true });
          break;
        case "em":
          walk(part.children, { ...own, italic: true });
          break;
        case "del":
          walk(part.children, { ...own, strikethrough: true });
          break;
        case "link": {
          walk(part.children, { ...own, underline: true });
          const label =
            part.children.length === 1 && part.children[0]!.kind === "text" ? part.children[0]!.text : "";
          if (label !== part.href && `mailto:${label}` !== part.href) add(` (${part.href})`, DIM);
          break;
        }
        case "break":
          lines.push([]);
          break;
        default: {
          const unknown: never = part;
          add(String(unknown), own);
        }
      }
    }
  };
  walk(inline, style);
  return lines;
}

function tableLines(block: Extract<MarkdownBlock, { kind: "table" }>): Line[] {
  const flat = (cell: readonly MarkdownInline[]) =>
    inlineLines(cell, {})
      .flat()
      .map((span) => span.text)
      .join("");
  const header = block.header.map(flat);
  const rows = block.rows.map((row) => row.map(flat));
  const widths = header.map((cell, index) =>
    Math.max(cell.length, ...rows.map((row) => row[index]?.length ?? 0)),
  );
  const pad = (cell: string, index: number) => {
    const width = widths[index] ?? cell.length;
    const align = block.align[index];
    if (align === "right") return cell.padStart(width);
    if (align === "center")
      return cell.padStart(cell.length + Math.floor((width - cell.length) / 2)).padEnd(width);
    return cell.padEnd(width);
  };
  const row = (cells: readonly string[], style?: SpanStyle): Line =>
    cells.flatMap((cell, index) => [
      ...(index > 0 ? [{ text: " │ ", style: DIM }] : []),
      style ? { text: pad(cell, index), style } : { text: pad(cell, index) },
    ]);
  return [
    row(header, { bold: true }),
    [{ text: widths.map((width) => "─".repeat(width)).join("─┼─"), style: DIM }],
    ...rows.map((cells) => row(cells)),
  ];
}
