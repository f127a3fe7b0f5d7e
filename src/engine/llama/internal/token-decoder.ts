import type { LlamaContextSequence, LlamaGrammarEvaluationState, Token } from "node-llama-cpp";
import type { GenerateRequest } from "../../engine.js";
import { NativeDecodeRun, type NativeDrafts } from "./native-decode.js";

export interface DecodeOptions {
  /** Most tokens the native loop may generate; 0 keeps them all on the batched path. */
  nativeTokens: number;
  /** What a native run drafts from; asked when the run starts. */
  nativeDrafts?: () => Promise<NativeDrafts | undefined>;
  /** Called when a native run ends, with the drafts it verified and how many it kept. */
  onNativeDrafted?: (result: { drafted: number; accepted: number }) => void;
  /** A call's grammar: its tokens are sampled on the batched path. */
  grammar?: LlamaGrammarEvaluationState;
}

/**
 * Where generated tokens come from: the addon's native greedy loop while one generation runs alone
 * (a native run holds the context to itself until stopped), else node-llama-cpp's batched
 * evaluation, which drafts with the sequence's predictor and samples.
 */
export class TokenDecoder {
  /** Native runs started so far, and how many of them verified drafts (tests read them). */
  readonly nativeRunCounts = { runs: 0, withDrafts: 0 };
  /** Native greedy runs in progress: each holds the context to itself until stopped. */
  private readonly nativeRuns = new Set<NativeDecodeRun>();
  private generating = 0;

  /** `nativeLoop`: the addon has the native loop and the engine may use it. */
  constructor(private readonly nativeLoop: boolean) {}

  /**
   * A generation begins. A native run holds the context until stopped (even erasing waits for it):
   * from here on it goes on in the batched path, beside the new one.
   */
  enter(): void {
    for (const run of this.nativeRuns) run.stop();
    this.generating++;
  }

  /** A generation that {@link enter}ed is over. */
  leave(): void {
    this.generating--;
  }

  /**
   * The generated tokens after `lastToken`. Up to `nativeTokens` of them come from the native loop,
   * when this is the only generation running and no grammar applies, with drafts from
   * `nativeDrafts()` verified there; the rest (all of them otherwise) from the batched path.
   */
  async *decode(
    sequence: LlamaContextSequence,
    lastToken: Token,
    request: GenerateRequest,
    { nativeTokens, nativeDrafts, onNativeDrafted, grammar }: DecodeOptions,
  ): AsyncGenerator<Token> {
    let next = lastToken;
    const nativeNow = () => nativeTokens > 0 && !grammar && this.nativeLoop && this.generating === 1;
    // Getting the drafts ready may wait (the draft model catching up): another request may come.
    const drafts = nativeNow() ? await nativeDrafts?.() : undefined;
    if (nativeNow()) {
      const run = new NativeDecodeRun(sequence, next, Math.min(nativeTokens, 2 ** 31 - 1), drafts);
      this.nativeRunCounts.runs++;
      if (drafts) this.nativeRunCounts.withDrafts++;
      this.nativeRuns.add(run);
      try {
        for await (const token of run) {
          next = token;
          yield token;
        }
      } finally {
        this.nativeRuns.delete(run);
        // Also when the consumer stopped early: the loop has stopped by now.
        const result = await run.finished.catch(() => undefined);
        if (result) onNativeDrafted?.(result);
      }
      if ((await run.finished).end !== "stopped") return;
    }
    yield* sequence.evaluate([next], {
      temperature: request.temperature ?? 0,
      topP: request.topP,
      seed: request.seed,
      grammarEvaluationState: grammar,
    });
  }
}
