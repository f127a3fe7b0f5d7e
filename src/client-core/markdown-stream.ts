import type { Links, Token } from "marked";
import { blocksOf, lexMarkdown, type MarkdownBlock } from "./markdown.js";

/**
 * Markdown that streams in, parsed as it grows: the blocks before the last blank line that no
 * block spans (a list, a fence or an HTML block can hold blank lines) are final, are kept with
 * their tree, and are never lexed again; each update lexes only the open tail after them. A
 * block's object stays the same while it is final, so a face can skip re-rendering it. The blocks
 * equal {@link parseMarkdown} of the whole text.
 *
 * Text that does not extend the last one (an edit, a shorter text) starts over; so does a new link
 * definition in the tail, since it can turn text in a final block into a link.
 */
export class MarkdownStream {
  /** The text of the final blocks, as given. */
  private finalText = "";
  private final: MarkdownBlock[] = [];
  private links: Links = {};
  private text = "";
  private blocks: readonly MarkdownBlock[] = [];

  /** The blocks of `text`; the same array while the text is the same. */
  update(text: string): readonly MarkdownBlock[] {
    if (text === this.text && this.blocks.length > 0) return this.blocks;
    if (!text.startsWith(this.finalText)) this.reset();
    let tail = text.slice(this.finalText.length);
    let tokens = lexMarkdown(tail, this.links);
    if (Object.keys(tokens.links).some((tag) => !Object.hasOwn(this.links, tag))) {
      this.reset();
      tail = text;
      tokens = lexMarkdown(tail, {});
    }
    this.links = tokens.links;
    const boundary = lastBoundary(tokens);
    if (boundary > 0) {
      const finished = tokens.slice(0, boundary);
      this.final.push(...blocksOf(finished));
      this.finalText += tail.slice(0, sourceLength(tail, finished));
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

/**
 * How many tokens are final: those up to the last blank line (a `space` token) that is followed by
 * a block. A block before it cannot change: the lexer closed it, and what streams in lands after.
 */
function lastBoundary(tokens: readonly Token[]): number {
  let last = tokens.length - 1;
  while (last >= 0 && tokens[last]!.type === "space") last--;
  for (let i = last - 1; i >= 0; i--) if (tokens[i]!.type === "space") return i + 1;
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
