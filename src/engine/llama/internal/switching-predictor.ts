import { type Token, TokenPredictor } from "node-llama-cpp";

type ResetParams = Parameters<TokenPredictor["reset"]>[0];

/**
 * One of several token predictors, chosen per request. node-llama-cpp fixes a sequence's
 * `tokenPredictor` when the sequence is created; this forwards every call to the selected one
 * (none selected: nothing is drafted). Select before an evaluation starts: node-llama-cpp resets
 * the predictor at the start of every evaluation, so the selected one always drafts from the
 * sequence's current state. Owns its predictors: disposing it disposes them all.
 */
export class SwitchingPredictor extends TokenPredictor {
  private selected: TokenPredictor | undefined;

  constructor(readonly predictors: readonly TokenPredictor[]) {
    super();
  }

  get current(): TokenPredictor | undefined {
    return this.selected;
  }

  /** Drafts with `predictor` (one of {@link predictors}) from the next evaluation; `undefined` drafts nothing. */
  select(predictor: TokenPredictor | undefined): void {
    if (predictor === this.selected) return;
    if (predictor !== undefined && !this.predictors.includes(predictor))
      throw new Error("SwitchingPredictor.select: not one of its predictors");
    void this.selected?.stop();
    this.selected = predictor;
  }

  override reset(params: ResetParams): Promise<void> | void {
    return this.selected?.reset(params);
  }

  override pushTokens(tokens: Token[]): void {
    this.selected?.pushTokens(tokens);
  }

  override predictTokens(): Promise<Token[]> | Token[] {
    return this.selected?.predictTokens() ?? [];
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
