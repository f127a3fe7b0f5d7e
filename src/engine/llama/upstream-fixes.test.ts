import {
  getLlama,
  type Llama,
  type LlamaContextSequence,
  LlamaLogLevel,
  type LlamaModel,
  type Token,
  TokenPredictor,
} from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { trainedTestModelPath } from "../test-support/test-model.js";

// The two plain node-llama-cpp fixes in patches/node-llama-cpp+3.22.1.patch, each also kept as its
// own upstream change in patches/upstream/ (see its README). These tests use node-llama-cpp's own
// API only (no Spark code), on the tiny trained stories260K, so they run as they are against any
// build of the addon; each fails on an unpatched node-llama-cpp.
const modelPath = trainedTestModelPath();

/** Drafts the next `length` tokens of a known output, from wherever the output has got to. */
class KnownOutputPredictor extends TokenPredictor {
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

/** Greedy tokens after `prompt` (end-of-text tokens included: stories260K ends stories often). */
async function* greedy(sequence: LlamaContextSequence, prompt: Token[]): AsyncGenerator<Token> {
  yield* sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true });
}

describe.skipIf(!modelPath)("node-llama-cpp fixes kept as upstream changes (stories260K)", () => {
  let llama: Llama;
  let model: LlamaModel;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error, maxThreads: 1 });
    model = await llama.loadModel({ modelPath: modelPath! });
  });
  afterAll(async () => {
    await model?.dispose();
    await llama?.dispose();
  });

  // patches/upstream/0001: the decode dispatcher held the context lock while any sequence had a
  // decode queued, so an erase on another sequence waited until every generation had finished.
  test("an erase on one sequence resolves while two others are still generating", async () => {
    const context = await model.createContext({ contextSize: 2048, sequences: 3, threads: 1 });
    try {
      const [first, second, third] = [context.getSequence(), context.getSequence(), context.getSequence()];
      const prompt = model.tokenize("Once upon a time", false);
      await third.evaluateWithoutGeneratingNewTokens(prompt);

      const longest = 400;
      const counts = [0, 0];
      const finished = [false, false];
      let bothStarted!: () => void;
      const started = new Promise<void>((resolve) => {
        bothStarted = resolve;
      });
      const generations = [first, second].map(async (sequence, i) => {
        for await (const _token of greedy(sequence, prompt)) {
          if (++counts[i]! === 3 && counts.every((n) => n >= 3)) bothStarted();
          if (counts[i] === longest) break;
        }
        finished[i] = true;
      });
      await started;
      const atStart = [...counts];

      await third.eraseContextTokenRanges([{ start: 0, end: third.nextTokenIndex }]);
      const atErase = { counts: [...counts], finished: [...finished] };
      await Promise.all(generations);

      expect(third.nextTokenIndex).toBe(0);
      expect(atErase.finished).toEqual([false, false]);
      // The erase waited for a batch or two, not for the generations.
      atErase.counts.forEach((count, i) => {
        expect(count - atStart[i]!).toBeLessThan(longest / 4);
      });
      expect(counts).toEqual([longest, longest]);
    } finally {
      await context.dispose();
    }
  });

  // patches/upstream/0002: a validated draft token was never recorded, so each later draft token was
  // compared against nothing and refuted: at most one draft token accepted a forward pass.
  test("a predictor drafting the model's own greedy continuation has every draft token accepted", async () => {
    // Short: further on, a pass over 9 tokens picks differently from a pass over 1 at a near-tie of
    // stories260K's (other kernels), and drafts of the plain output no longer apply after it.
    const OUTPUT = 27;
    const predictor = new KnownOutputPredictor();
    const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
    try {
      const sequence = context.getSequence({ tokenPredictor: predictor });
      const prompt = model.tokenize("Once upon a time", false);
      predictor.promptLength = prompt.length;
      const generate = async (draft: number) => {
        await sequence.clearHistory();
        predictor.length = draft;
        const before = { ...sequence.tokenPredictions };
        const tokens: Token[] = [];
        for await (const token of greedy(sequence, prompt)) {
          tokens.push(token);
          if (tokens.length === OUTPUT) break;
        }
        const after = sequence.tokenPredictions;
        return { tokens, used: after.used - before.used, refuted: after.refuted - before.refuted };
      };

      const plain = await generate(0);
      predictor.output = plain.tokens;
      const drafted = await generate(8);

      expect(drafted.tokens).toEqual(plain.tokens);
      expect(drafted.refuted).toBe(0);
      // Three forward passes of 1 + 8 tokens: 8 of every 9 came from the draft; without the fix at
      // most 1 of every 2 could (only the first draft token of a pass was ever accepted).
      expect(drafted.used).toBeGreaterThanOrEqual(OUTPUT - 3);
    } finally {
      await context.dispose();
    }
  });
});
