import { type Token, TokenPredictor } from "node-llama-cpp";

type ResetParams = Parameters<TokenPredictor["reset"]>[0];

/**
 * One of several token predictors, chosen per request. node-llama-cpp fixes a sequence's
 * `tokenPredictor` when the sequence is created; this forwards every call to the selected one
 * (none selected: nothing is drafted). A predictor selected after the sequence's last reset is
 * reset to the sequence's current state before it drafts, so it never drafts from a stale one.
 * Owns its predictors: disposing it disposes them all.
 */
export class SwitchingPredictor extends TokenPredictor {
  private selected: TokenPredictor | undefined;
  private lastReset: ResetParams | undefined;
  /** Tokens pushed since the last reset: with it, the sequence's current state. */
  private pushed: Token[] = [];
  /** The selected predictor has not seen the last reset yet. */
  private stale = false;

  constructor(readonly predictors: readonly TokenPredictor[]) {
    super();
  }

  get current(): TokenPredictor | undefined {
    return this.selected;
  }

  /** Drafts with `predictor` (one of {@link predictors}) from now on; `undefined` drafts nothing. */
  select(predictor: TokenPredictor | undefined): void {
    if (predictor === this.selected) return;
    if (predictor !== undefined && !this.predictors.includes(predictor))
      throw new Error("SwitchingPredictor.select: not one of its predictors");
    void this.selected?.stop();
    this.selected = predictor;
    this.stale = predictor !== undefined && this.lastReset !== undefined;
  }

  override reset(params: ResetParams): Promise<void> | void {
    this.lastReset = params;
    this.pushed = [];
    this.stale = false;
    return this.selected?.reset(params);
  }

  override pushTokens(tokens: Token[]): void {
    if (this.lastReset !== undefined) for (const token of tokens) this.pushed.push(token);
    // A stale predictor gets these with its reset.
    if (!this.stale) this.selected?.pushTokens(tokens);
  }

  override predictTokens(): Promise<Token[]> | Token[] {
    const selected = this.selected;
    if (selected === undefined) return [];
    if (this.stale && this.lastReset !== undefined) {
      this.stale = false;
      const reset = selected.reset({
        ...this.lastReset,
        stateTokens: [...this.lastReset.stateTokens, ...this.pushed],
      });
      if (reset instanceof Promise) return reset.then(() => selected.predictTokens());
    }
    return selected.predictTokens();
  }

  override stop(untilPredictionsExhausted?: boolean): Promise<void> | void {
    return this.selected?.stop(untilPredictionsExhausted);
  }

  override updateInputTokens(tokens: Token[]): void {
    this.selected?.updateInputTokens(tokens);
  }

  override async dispose(): Promise<void> {
    this.selected = undefined;
    await Promise.all(this.predictors.map((predictor) => predictor.dispose()));
  }
}
