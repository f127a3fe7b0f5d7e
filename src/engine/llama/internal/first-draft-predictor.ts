import { type Token, TokenPredictor } from "node-llama-cpp";

type ResetParams = Parameters<TokenPredictor["reset"]>[0];

/**
 * Drafts from the first of its predictors that has a draft (prompt lookup, then the draft model),
 * while every one of them follows the output. Does not own its predictors: disposing it leaves them.
 */
export class FirstDraftPredictor extends TokenPredictor {
  constructor(private readonly predictors: readonly TokenPredictor[]) {
    super();
  }

  override async reset(params: ResetParams): Promise<void> {
    await Promise.all(this.predictors.map((predictor) => predictor.reset(params)));
  }

  override pushTokens(tokens: Token[]): void {
    for (const predictor of this.predictors) predictor.pushTokens(tokens);
  }

  override async predictTokens(): Promise<Token[]> {
    for (const predictor of this.predictors) {
      const drafted = await predictor.predictTokens();
      if (drafted.length > 0) return drafted;
    }
    return [];
  }

  override async stop(untilPredictionsExhausted?: boolean): Promise<void> {
    await Promise.all(this.predictors.map((predictor) => predictor.stop(untilPredictionsExhausted)));
  }

  override updateInputTokens(tokens: Token[]): void {
    for (const predictor of this.predictors) predictor.updateInputTokens(tokens);
  }

  override dispose(): void {}
}
