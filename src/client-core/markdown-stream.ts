import type { Links, Token } from "marked";
import { blocksOf, lexMarkdown, type MarkdownBlock } from "./markdown.js";

/**
 * Markdown that streams in, parsed as it grows: the blocks before the last blank line that no
 * block spans (a list, a fence or an HTML block can hold blank lines), once the block after it has
 * a whole first line, are final, are kept with their tree, and are never lexed again; each update
 * lexes only the open tail after them. A
 * block's object stays the same while it is final, so a face can skip re-rendering it. The blocks
 * equal {@link parseMarkdown} of the whole text.
 *
 * Text that does not extend the last one (an edit, a shorter text) starts over; so does a link
 * definition in the tail, while a final block might refer to it.
 */
export class MarkdownStream {
  /** The text of the final blocks, as given. */
  private finalText = "";
  private final: MarkdownBlock[] = [];
  /** The link definitions in the final blocks. */
  private links: Links = {};
  private text = "";
  private blocks: readonly MarkdownBlock[] = [];

  /** The blocks of `text`; the same array while the text is the same. */
  update(text: string): readonly MarkdownBlock[] {
    if (text === this.text && this.blocks.length > 0) return this.blocks;
    if (!text.startsWith(this.finalText)) this.reset();
    let tail = text.slice(this.finalText.length);
    let tokens = lexMarkdown(tail, this.links);
    const defined = Object.keys(tokens.links).some((tag) => !Object.hasOwn(this.links, tag));
    if (defined && this.finalText.includes("[")) {
      // A definition in the tail may turn a reference in a final block into a link.
      this.reset();
      tail = text;
      tokens = lexMarkdown(tail, {});
    }
    const boundary = lastBoundary(tokens);
    if (boundary > 0) {
      const finished = tokens.slice(0, boundary);
      this.final.push(...blocksOf(finished));
      this.finalText += tail.slice(0, sourceLength(tail, finished));
      addDefinitions(this.links, finished);
    }
    this.text = text;
    this.blocks = [...this.final, ...blocksOf(tokens.slice(boundary))];
    return this.blocks;
  }

  private reset(): void {
    this.finalText = "";
    this.final = [];
    this.links = {};
  }
}

/** Adds the link definitions among `tokens` (in quotes and lists too); the first of a label wins. */
function addDefinitions(links: Links, tokens: readonly Token[]): void {
  for (const token of tokens) {
    if (token.type === "def") {
      if (!Object.hasOwn(links, token.tag)) links[token.tag] = { href: token.href, title: token.title };
    } else if (token.type === "blockquote") addDefinitions(links, token.tokens ?? []);
    else if (token.type === "list") for (const item of token.items) addDefinitions(links, item.tokens);
  }
}

/**
 * How many tokens are final: those up to the last blank line (a `space` token) after which a block
 * has a whole first line. The lexer closed the blocks before it, and that line settles that
 * nothing streaming in continues them (a "3" could still become "3. item" of the list above).
 */
function lastBoundary(tokens: readonly Token[]): number {
  let block = false;
  let newline = false;
  for (let i = tokens.length - 1; i >= 0; i--) {
    const token = tokens[i]!;
    if (token.type === "space") {
      if (block && newline) return i + 1;
    } else block = true;
    newline ||= token.raw.includes("\n");
  }
  return 0;
}

/**
 * The length in `source` of the text the tokens were lexed from: marked reads "\r\n" and "\r" as
 * "\n", so its tokens' `raw` can be shorter than the source they cover.
 */
function sourceLength(source: string, tokens: readonly Token[]): number {
  let normalized = 0;
  for (const token of tokens) normalized += token.raw.length;
  if (!source.includes("\r")) return normalized;
  let at = 0;
  for (let seen = 0; seen < normalized; seen++) {
    at += source[at] === "\r" && source[at + 1] === "\n" ? 2 : 1;
  }
  return at;
}
