import { type LlamaContextSequence, type Token, TokenPredictor } from "node-llama-cpp";

export interface DraftModelSettings {
  /** Most tokens drafted before each forward pass of the main model. */
  maxTokens: number;
  /**
   * Drafting stops after a token the draft model gives less than this probability (that token is
   * still drafted, as in llama.cpp's speculative decoding). 0 always drafts `maxTokens`.
   */
  minConfidence: number;
}

/**
 * Drafts with a smaller model that shares the main model's vocabulary. Before each forward pass of
 * the main model, the draft sequence catches up with the output so far (keeping whatever prefix it
 * already holds) and decodes up to `maxTokens` greedily; the main model verifies them in one pass.
 *
 * Synchronous, like llama.cpp's: nothing runs in the background, so on a CPU the two models never
 * compete for the same cores. The draft's KV state is compared with the main sequence's tokens every
 * time rather than tracked, so it cannot drift out of step. (node-llama-cpp's
 * DraftSequenceTokenPredictor does drift: once every drafted token is accepted, the last one was
 * never evaluated on the draft sequence, and from then on it drafts from a wrong state.)
 */
export class DraftModelPredictor extends TokenPredictor {
  /** The main sequence's tokens: the prompt and the output accepted so far. */
  private state: Token[] = [];

  constructor(
    private readonly draftSequence: LlamaContextSequence,
    readonly settings: DraftModelSettings,
  ) {
    super();
  }

  /** The draft model's sequence (a copied conversation copies its state too). */
  get sequence(): LlamaContextSequence {
    return this.draftSequence;
  }

  override reset({ stateTokens }: { stateTokens: Token[] }): void {
    this.state = stateTokens.slice();
  }

  // node-llama-cpp pushes the output one token at a time, verified drafts included.
  override pushTokens(tokens: Token[]): void {
    for (const token of tokens) this.state.push(token);
  }

  /**
   * Evaluates `tokens[0..end)` (a prefix of the main sequence's state) into the draft sequence, in
   * chunks, stopping early when `signal` aborts; drafting later evaluates only what is still missing.
   */
  async catchUp(tokens: Token[], end: number, chunk: number, signal?: AbortSignal): Promise<void> {
    let at = await this.keepCommonPrefix(tokens, end);
    while (at < end && !signal?.aborted) {
      const to = Math.min(end, at + chunk);
      await this.draftSequence.evaluateWithoutGeneratingNewTokens(tokens.slice(at, to));
      at = to;
    }
  }

  override async predictTokens(): Promise<Token[]> {
    const state = this.state;
    const sequence = this.draftSequence;
    // Drafting must not make the draft sequence shift its context: that would lose its place.
    const max = Math.min(this.settings.maxTokens, sequence.context.contextSize - state.length);
    if (state.length === 0 || max <= 0) return [];
    // The last token is always evaluated: its logits give the first draft token.
    const start = await this.keepCommonPrefix(state, state.length - 1);
    const drafted: Token[] = [];
    const evaluation = sequence.evaluateWithMetadata(
      state.slice(start),
      { confidence: true },
      { temperature: 0 },
    );
    for await (const { token, confidence } of evaluation) {
      drafted.push(token);
      if (drafted.length >= max || (confidence ?? 1) < this.settings.minConfidence) break;
    }
    return drafted;
  }

  /** Erases what the draft sequence holds past `tokens`' common prefix (at most `limit`); returns its length. */
  private async keepCommonPrefix(tokens: Token[], limit: number): Promise<number> {
    const sequence = this.draftSequence;
    const keep = Math.min(limit, sequence.compareContextTokens(tokens).firstDifferentIndex);
    if (keep < sequence.nextTokenIndex)
      await sequence.eraseContextTokenRanges([{ start: keep, end: sequence.nextTokenIndex }]);
    return keep;
  }
}
