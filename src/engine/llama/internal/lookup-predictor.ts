import { type Token, TokenPredictor } from "node-llama-cpp";

/** Drafting from the conversation's own tokens, the prompt and the output so far (prompt lookup). */
export interface TokenLookup {
  kind: "tokens";
  /** Shortest run of recent tokens that must occur earlier in the conversation before drafting. */
  minPattern: number;
  maxDraft: number;
}

/**
 * Drafting from a prediction's text (Predicted Outputs). Matching is done on text, not tokens:
 * a model does not always produce the canonical tokenization of what it writes, and a token-level
 * cursor would lose its place at every such spot.
 */
export interface TextLookup {
  kind: "text";
  text: string;
  maxDraft: number;
  tokenize: (text: string) => Token[];
  detokenize: (tokens: Token[], lastTokens: Token[]) => string;
}

export type LookupSettings = TokenLookup | TextLookup | { kind: "off" };

const LONGEST_PATTERN = 8;
/** Characters of recent output used to find the place again after a mismatch, longest first. */
const RESYNC_CHARS = [32, 16, 8];

/**
 * Drafts the next tokens from a source the output is likely to copy, and follows the source
 * forward while the output agrees. After a mismatch it re-synchronises on the next place the
 * recent output appears, so an edit in the middle of a file does not cost the rest of it.
 * llama.cpp verifies the drafts; with greedy sampling the output is exactly plain decoding's.
 *
 * This drafts for node-llama-cpp's batched path (the prebuilt binary, sampling, concurrent
 * generations). The patched addon's native loop drafts the same way from the same settings
 * (`PredictionDrafts` and `LookupDrafts` in its AddonContextGenerate.cpp, see native-decode.ts).
 */
export class LookupPredictor extends TokenPredictor {
  private settings: LookupSettings = { kind: "off" };
  /** Where the output starts in the sequence's state: tokens before it are the prompt. */
  private outputStart = 0;
  /** The conversation so far: the sequence's state and every token pushed since. */
  private history: Token[] = [];
  private recentText = "";
  /** Tokens of a character not complete yet (a multi-byte character split across tokens). */
  private pendingTokens: Token[] = [];
  /** Where the output continues in the source (token index or character offset), or -1. */
  private cursor = -1;
  /** Where in the prediction the output last departed from it: the search for it starts there. */
  private departedAt = 0;
  /**
   * Current draft length: halved when a draft is refuted, doubled when one is used in full, so a
   * stretch of output that departs from the source wastes little verification work.
   */
  private draft = 4;
  private lastDraft = 0;
  /** Tokens pushed since the last draft: one more than the draft's length when all of it was used. */
  private pushedSinceDraft = 0;

  /** Drafts from `settings` for a request whose output starts at token `outputStart` of the state. */
  configure(settings: LookupSettings, outputStart = 0): void {
    this.settings = settings;
    this.outputStart = outputStart;
    this.draft = settings.kind === "off" ? 0 : settings.maxDraft;
    this.lastDraft = 0;
    this.pushedSinceDraft = 0;
    this.recentText = "";
    this.pendingTokens = [];
    // A prediction is the expected output from its first character.
    this.cursor = settings.kind === "text" ? 0 : -1;
    this.departedAt = 0;
  }

  // node-llama-cpp resets the predictor at the start of each evaluation: at the output's start, or
  // in the middle of it (after a native run, or a stretch under a grammar) with its place unknown.
  override reset({ stateTokens }: { stateTokens: Token[] }): void {
    const settings = this.settings;
    const output = stateTokens.slice(this.outputStart);
    this.history = settings.kind === "off" ? [] : stateTokens.slice();
    this.lastDraft = 0;
    this.pendingTokens = [];
    this.departedAt = 0;
    this.recentText = "";
    this.cursor = -1;
    if (settings.kind === "text") {
      if (output.length === 0) this.cursor = 0;
      else this.recentText = settings.detokenize(output.slice(-24), output.slice(-28, -24)).slice(-64);
    }
  }

  // node-llama-cpp pushes the output one token at a time, verified drafts included.
  override pushTokens(tokens: Token[]): void {
    const settings = this.settings;
    this.pushedSinceDraft += tokens.length;
    if (settings.kind === "text") {
      this.pendingTokens.push(...tokens);
      const lastTokens = this.history.slice(-4);
      const piece = settings.detokenize(this.pendingTokens, lastTokens);
      if (!(piece.endsWith("\uFFFD") && this.pendingTokens.length < 4)) {
        this.pendingTokens = [];
        this.recentText = (this.recentText + piece).slice(-64);
        if (this.cursor >= 0 && !settings.text.startsWith(piece, this.cursor)) {
          this.departedAt = this.cursor;
          this.cursor = -1;
        } else if (this.cursor >= 0) this.cursor += piece.length;
      }
    } else if (settings.kind === "tokens") {
      for (const token of tokens) {
        if (this.cursor >= 0) this.cursor = this.history[this.cursor] === token ? this.cursor + 1 : -1;
        this.history.push(token);
      }
      return;
    }
    this.history.push(...tokens);
  }

  override predictTokens(): Token[] {
    const settings = this.settings;
    if (settings.kind === "off") return [];
    this.adaptDraftLength(settings.maxDraft);
    if (settings.kind === "text") {
      // Mid-character, the place in the text is not known yet.
      if (this.pendingTokens.length > 0) return [];
      if (this.cursor < 0 || this.cursor >= settings.text.length) {
        this.cursor = this.resyncText(settings.text);
        // Back in step with the prediction after an edit: the text after it is likely unchanged.
        if (this.cursor >= 0) this.draft = settings.maxDraft;
      }
      if (this.cursor < 0) return [];
      // About four characters a token is plenty of text to draft `maxDraft` tokens from.
      const window = settings.text.slice(this.cursor, this.cursor + this.draft * 8);
      return this.drafted(settings.tokenize(window).slice(0, this.draft));
    }
    if (this.cursor < 0 || this.cursor >= this.history.length) this.cursor = this.resyncTokens(settings);
    if (this.cursor < 0) return [];
    return this.drafted(this.history.slice(this.cursor, this.cursor + this.draft));
  }

  private adaptDraftLength(maxDraft: number): void {
    if (this.lastDraft === 0) return;
    const usedInFull = this.pushedSinceDraft > this.lastDraft;
    this.draft = usedInFull ? Math.min(maxDraft, this.draft * 2) : Math.max(1, this.draft >> 1);
    this.lastDraft = 0;
  }

  private drafted(tokens: Token[]): Token[] {
    this.lastDraft = tokens.length;
    this.pushedSinceDraft = 0;
    return tokens;
  }

  /**
   * The place after the recent output's next occurrence in the prediction. An edit moves forward
   * through the file, so the search starts where the output departed (less the longest tail, which
   * may begin before it), and only then from the top: code repeats lines, and the first `}` of a
   * file is rarely the one being written.
   */
  private resyncText(text: string): number {
    const from = Math.max(0, this.departedAt - RESYNC_CHARS[0]!);
    for (const start of from > 0 ? [from, 0] : [0]) {
      for (const length of RESYNC_CHARS) {
        if (this.recentText.length < length) continue;
        const tail = this.recentText.slice(-length);
        const at = text.indexOf(tail, start);
        if (at >= 0 && at + length < text.length) return at + length;
      }
    }
    return -1;
  }

  /**
   * The place after the earliest of the longest runs (`minPattern` to 8 tokens) that end the
   * conversation and occur earlier in it.
   */
  private resyncTokens({ minPattern }: TokenLookup): number {
    const history = this.history;
    const last = history.length - 1;
    let best = -1;
    let bestLength = minPattern - 1;
    for (let i = minPattern - 1; i < last; i++) {
      if (history[i] !== history[last]) continue;
      let length = 1;
      while (length < LONGEST_PATTERN && i - length >= 0 && history[i - length] === history[last - length])
        length++;
      if (length > bestLength) {
        best = i + 1;
        bestLength = length;
        if (length === LONGEST_PATTERN) break;
      }
    }
    return best;
  }

  override dispose(): void {
    this.history = [];
    this.recentText = "";
  }
}
