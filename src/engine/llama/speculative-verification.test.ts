import { getLlama, LlamaLogLevel, type Token, TokenPredictor } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testModelPath } from "../test-support/test-model.js";

/** Drafts the next `length` tokens of a known output, from wherever the output has got to. */
class ExactPredictor extends TokenPredictor {
  output: Token[] = [];
  length = 0;
  promptLength = 0;
  private at = 0;
  override reset({ stateTokens }: { stateTokens: Token[] }): void {
    this.at = stateTokens.length - this.promptLength;
  }
  override pushTokens(tokens: Token[]): void {
    this.at += tokens.length;
  }
  override predictTokens(): Token[] {
    return this.output.slice(this.at, this.at + this.length);
  }
}

// node-llama-cpp 3.22.1 validated only the first draft token of each forward pass: every later one
// was compared against an empty list and refuted. patches/node-llama-cpp+3.22.1.patch fixes it;
// this test fails without the patch (at most half the tokens could come from drafts).
describe("speculative verification in node-llama-cpp (patched)", () => {
  const predictor = new ExactPredictor();
  let dispose: () => Promise<void>;
  let generate: (drafts: number) => Promise<{ tokens: Token[]; used: number; refuted: number }>;

  beforeAll(async () => {
    const llama = await getLlama({
      gpu: false,
      build: "never",
      logLevel: LlamaLogLevel.error,
      maxThreads: 1,
    });
    const model = await llama.loadModel({ modelPath: await testModelPath() });
    const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
    const sequence = context.getSequence({ tokenPredictor: predictor });
    const prompt = model.tokenize("Write a function that adds two numbers.", false);
    predictor.promptLength = prompt.length;
    generate = async (drafts) => {
      await sequence.clearHistory();
      predictor.length = drafts;
      const before = { ...sequence.tokenPredictions };
      const tokens: Token[] = [];
      for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
        tokens.push(token);
        if (tokens.length === 96) break;
      }
      const after = sequence.tokenPredictions;
      return { tokens, used: after.used - before.used, refuted: after.refuted - before.refuted };
    };
    dispose = async () => {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    };
  });
  afterAll(async () => {
    await dispose();
  });

  test("a draft of 8 exact tokens is accepted whole: 9 tokens a forward pass", async () => {
    const plain = await generate(0);
    predictor.output = plain.tokens;
    const drafted = await generate(8);
    expect(drafted.tokens).toEqual(plain.tokens);
    expect(drafted.refuted).toBe(0);
    // 96 tokens in passes of 9: all but one token of each pass came from the draft.
    expect(drafted.used).toBeGreaterThanOrEqual(Math.floor((96 * 8) / 9) - 1);
  });

  test("a wrong draft is refuted and the output is still plain decoding's", async () => {
    const plain = await generate(0);
    predictor.output = plain.tokens.map((token, i) => (i % 20 === 10 ? ((token + 1) as Token) : token));
    const drafted = await generate(8);
    expect(drafted.tokens).toEqual(plain.tokens);
    expect(drafted.refuted).toBeGreaterThan(0);
    expect(drafted.used).toBeGreaterThan(48);
  });
});
