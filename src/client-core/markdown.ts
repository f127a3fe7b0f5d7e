import { getDefaults, Lexer, type Links, type Token, type Tokens } from "marked";

/**
 * The Markdown the agent writes, as a tree every face renders with its own elements (Ink, Preact,
 * the VS Code webview's DOM). Built from `marked`'s lexer, never from its HTML output: raw HTML in
 * the text stays text, and a link keeps its target only when it is http(s) or mailto, so nothing
 * the model writes can inject markup or script.
 */
export type MarkdownInline =
  | { kind: "text"; text: string }
  | { kind: "code"; text: string }
  | { kind: "strong" | "em" | "del"; children: MarkdownInline[] }
  /** `href` is always http(s) or mailto; other targets are left as their text. */
  | { kind: "link"; href: string; children: MarkdownInline[] }
  | { kind: "break" };

export type MarkdownBlock =
  | { kind: "heading"; level: number; inline: MarkdownInline[] }
  | { kind: "paragraph"; inline: MarkdownInline[] }
  /** Inline content without a paragraph around it: a tight list item's text. */
  | { kind: "text"; inline: MarkdownInline[] }
  /**
   * `fence` is the opening fence line without its indentation ("```ts"; "" for an indented block);
   * `open` while the closing fence has not streamed in yet.
   */
  | { kind: "code"; language: string; text: string; fence: string; open: boolean }
  | { kind: "list"; ordered: boolean; start: number; items: MarkdownListItem[] }
  | { kind: "quote"; blocks: MarkdownBlock[] }
  | { kind: "table"; align: TableAlign[]; header: MarkdownInline[][]; rows: MarkdownInline[][][] }
  | { kind: "rule" };

export interface MarkdownListItem {
  /** A task list item's box; null for an ordinary item. */
  checked: boolean | null;
  blocks: MarkdownBlock[];
}

export type TableAlign = "left" | "center" | "right" | null;

const SAFE_LINK = /^(?:https?:\/\/|mailto:)/i;

/** The whole text, parsed at once (see {@link MarkdownStream} for text that is still growing). */
export function parseMarkdown(text: string): MarkdownBlock[] {
  return blocksOf(lexMarkdown(text, {}));
}

/** `marked`'s block and inline tokens of `text`, with the link definitions already known. */
export function lexMarkdown(text: string, links: Links): ReturnType<Lexer["lex"]> {
  const lexer = new Lexer({ ...getDefaults(), gfm: true });
  Object.assign(lexer.tokens.links, links);
  return lexer.lex(text);
}

/** The blocks of a run of block tokens (spaces and link definitions show nothing). */
export function blocksOf(tokens: readonly Token[]): MarkdownBlock[] {
  const blocks: MarkdownBlock[] = [];
  for (const token of tokens) {
    const block = blockOf(token as MarkedBlockToken);
    if (block) blocks.push(block);
  }
  return blocks;
}

type MarkedBlockToken =
  | Tokens.Blockquote
  | Tokens.Code
  | Tokens.Def
  | Tokens.Heading
  | Tokens.Hr
  | Tokens.HTML
  | Tokens.List
  | Tokens.Paragraph
  | Tokens.Space
  | Tokens.Table
  | Tokens.Text
  | Tokens.Checkbox;

function blockOf(token: MarkedBlockToken): MarkdownBlock | null {
  switch (token.type) {
    case "space":
    case "def":
    case "checkbox":
      return null;
    case "heading":
      return { kind: "heading", level: token.depth, inline: inlineOf(token.tokens) };
    case "paragraph":
      return { kind: "paragraph", inline: inlineOf(token.tokens) };
    case "text":
      return { kind: "text", inline: token.tokens ? inlineOf(token.tokens) : [text(token.text)] };
    case "code":
      return codeBlockOf(token);
    case "list":
      return {
        kind: "list",
        ordered: token.ordered,
        start: token.start === "" ? 1 : token.start,
        items: token.items.map((item) => ({
          checked: item.task ? (item.checked ?? false) : null,
          blocks: blocksOf(item.tokens),
        })),
      };
    case "blockquote":
      return { kind: "quote", blocks: blocksOf(token.tokens) };
    case "table":
      return {
        kind: "table",
        align: token.align,
        header: token.header.map((cell) => inlineOf(cell.tokens)),
        rows: token.rows.map((row) => row.map((cell) => inlineOf(cell.tokens))),
      };
    case "hr":
      return { kind: "rule" };
    case "html":
      // Raw HTML is shown as the text it is.
      return { kind: "paragraph", inline: [text(token.text.replace(/\n+$/, ""))] };
    default: {
      const unknown: never = token;
      const generic = unknown as Token;
      return { kind: "paragraph", inline: [text(generic.raw)] };
    }
  }
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/;

function codeBlockOf(token: Tokens.Code): MarkdownBlock {
  const language = (token.lang ?? "").trim().split(/\s/)[0] ?? "";
  if (token.codeBlockStyle === "indented") {
    return { kind: "code", language, text: token.text.replace(/\n+$/, ""), fence: "", open: false };
  }
  const lines = token.raw.replace(/\n+$/, "").split("\n");
  const fence = lines[0]!.trim();
  const marker = FENCE_OPEN.exec(token.raw)?.[1] ?? "```";
  const last = lines.at(-1)?.trim() ?? "";
  // Closed when a line after the opening one is a fence of the same character, at least as long.
  const closed =
    lines.length > 1 && last.length >= marker.length && /^(`+|~+)$/.test(last) && last[0] === marker[0];
  return { kind: "code", language, text: token.text, fence, open: !closed };
}

type MarkedInlineToken =
  | Tokens.Br
  | Tokens.Checkbox
  | Tokens.Codespan
  | Tokens.Del
  | Tokens.Em
  | Tokens.Escape
  | Tokens.Image
  | Tokens.Link
  | Tokens.Strong
  | Tokens.Tag
  | Tokens.Text;

function inlineOf(tokens: readonly Token[]): MarkdownInline[] {
  const out: MarkdownInline[] = [];
  const push = (part: MarkdownInline) => {
    const last = out.at(-1);
    if (part.kind === "text" && last?.kind === "text") last.text += part.text;
    else out.push(part);
  };
  for (const token of tokens as readonly MarkedInlineToken[]) {
    switch (token.type) {
      case "text":
        if (token.tokens) for (const part of inlineOf(token.tokens)) push(part);
        else push(text(token.escaped ? token.text : decodeEntities(token.text)));
        break;
      case "escape":
        push(text(token.text));
        break;
      case "html":
        push(text(token.raw));
        break;
      case "codespan":
        push({ kind: "code", text: token.text });
        break;
      case "strong":
      case "em":
      case "del":
        push({ kind: token.type, children: inlineOf(token.tokens) });
        break;
      case "link": {
        const children = inlineOf(token.tokens);
        if (SAFE_LINK.test(token.href)) push({ kind: "link", href: token.href, children });
        else for (const part of children) push(part);
        break;
      }
      case "image":
        // Never loaded (a remote image would tell its server who reads the answer): a link at most.
        if (SAFE_LINK.test(token.href))
          push({ kind: "link", href: token.href, children: [text(token.text || token.href)] });
        else push(text(token.text));
        break;
      case "br":
        push({ kind: "break" });
        break;
      case "checkbox":
        break;
      default: {
        const unknown: never = token;
        push(text((unknown as Token).raw));
      }
    }
  }
  return out;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", "#39": "'" };

/** marked leaves a text's character references for an HTML renderer to resolve; a face shows text. */
function decodeEntities(value: string): string {
  return value.includes("&")
    ? value.replace(/&(amp|lt|gt|quot|apos|#39);/g, (_, name: string) => ENTITIES[name]!)
    : value;
}

function text(value: string): MarkdownInline {
  return { kind: "text", text: value };
}
