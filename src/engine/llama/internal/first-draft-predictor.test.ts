import { type LlamaContextSequence, type Token, TokenPredictor } from "node-llama-cpp";
import { describe, expect, test } from "vitest";
import { FirstDraftPredictor } from "./first-draft-predictor.js";

/** Follows the output and drafts `draft(state)`; records whether it was asked. */
class Fixed extends TokenPredictor {
  state: Token[] = [];
  asked = 0;
  disposed = false;
  constructor(private readonly draft: (state: Token[]) => number[]) {
    super();
  }
  override reset({ stateTokens }: { stateTokens: Token[] }): void {
    this.state = stateTokens.slice();
  }
  override pushTokens(tokens: Token[]): void {
    this.state.push(...tokens);
  }
  override predictTokens(): Token[] {
    this.asked++;
    return this.draft(this.state) as Token[];
  }
  override dispose(): void {
    this.disposed = true;
  }
}

const params = (stateTokens: number[]) => ({
  targetSequence: {} as LlamaContextSequence,
  stateTokens: stateTokens as Token[],
  evaluateOptions: {},
});

describe("FirstDraftPredictor", () => {
  test("drafts from the first predictor that has a draft, and only asks the next when it has none", async () => {
    // The first drafts only after an even-length state.
    const lookup = new Fixed((state) => (state.length % 2 === 0 ? [7, 8] : []));
    const model = new Fixed(() => [9]);
    const first = new FirstDraftPredictor([lookup, model]);
    await first.reset(params([1, 2]));
    expect(await first.predictTokens()).toEqual([7, 8]);
    expect(model.asked).toBe(0);
    first.pushTokens([3 as Token]);
    expect(await first.predictTokens()).toEqual([9]);
    expect(model.asked).toBe(1);
  });

  test("every predictor follows the output, drafting or not", async () => {
    const lookup = new Fixed(() => [1]);
    const model = new Fixed(() => [2]);
    const first = new FirstDraftPredictor([lookup, model]);
    await first.reset(params([5, 6]));
    first.pushTokens([7 as Token, 8 as Token]);
    expect(model.state).toEqual([5, 6, 7, 8]);
    expect(lookup.state).toEqual([5, 6, 7, 8]);
  });

  test("nothing to draft from any of them drafts nothing; disposing leaves its predictors to their owner", async () => {
    const none = new Fixed(() => []);
    const first = new FirstDraftPredictor([none, new Fixed(() => [])]);
    await first.reset(params([1]));
    expect(await first.predictTokens()).toEqual([]);
    first.dispose();
    expect(none.disposed).toBe(false);
  });
});
