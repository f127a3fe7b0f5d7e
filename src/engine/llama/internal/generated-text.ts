import type { LlamaModel, Token } from "node-llama-cpp";

/** A token boundary to generate again from, and the text from there to where a call's trigger ends. */
export interface RewindPoint {
  tokens: number;
  lead: string;
}

/**
 * The tokens generated so far and their text, decoded whole characters at a time, with each token
 * boundary a call can be generated again from.
 */
export class GeneratedText {
  readonly tokens: Token[] = [];
  /** The text of the tokens up to the last flush. */
  text = "";
  /** Tokens not yet decoded: they end inside a multi-byte character. */
  private pending: Token[] = [];
  /** Where each flush of decoded text ended: tokens so far and text offset. */
  private readonly flushes: { tokens: number; text: number }[] = [{ tokens: 0, text: 0 }];
  /** Characters of regenerated text the parser already has (see {@link rewind}). */
  private skip = 0;

  constructor(private readonly model: LlamaModel) {}

  /** Adds a generated token; returns the text new to the parser, or undefined while a character is incomplete. */
  push(token: Token): string | undefined {
    const { tokens } = this;
    tokens.push(token);
    this.pending.push(token);
    const pending = this.pending;
    const text = this.model.detokenize(pending, true, tokens.slice(-pending.length - 4, -pending.length));
    // A multi-byte character split across tokens decodes to U+FFFD until its last byte arrives.
    if (text.endsWith("\uFFFD") && pending.length < 4) return undefined;
    this.pending = [];
    this.text += text;
    this.flushes.push({ tokens: tokens.length, text: this.text.length });
    const fresh = text.slice(Math.min(this.skip, text.length));
    this.skip -= text.length - fresh.length;
    return fresh;
  }

  /** The last token boundary at or before text offset `at` (where a call's trigger ends). */
  rewindPoint(at: number): RewindPoint | undefined {
    for (let i = this.flushes.length - 1; i >= 0; i--) {
      const flush = this.flushes[i]!;
      if (flush.text <= at) return { tokens: flush.tokens, lead: this.text.slice(flush.text, at) };
    }
    return undefined;
  }

  /**
   * Drops what was generated after `point`; the parser already has its `lead`, so that much of the
   * text generated again is not handed to it twice.
   */
  rewind(point: RewindPoint): void {
    this.tokens.length = point.tokens;
    while (this.flushes.at(-1)!.tokens > point.tokens) this.flushes.pop();
    this.text = this.text.slice(0, this.flushes.at(-1)!.text);
    this.pending = [];
    this.skip = point.lead.length;
  }
}
