import type { LlamaContextSequence, LlamaGrammarEvaluationState, Token } from "node-llama-cpp";
import type { GenerateRequest } from "../../engine.js";
import { type NativeDecodeResult, NativeDecodeRun, type NativeDrafts } from "./native-decode.js";

export interface DecodeOptions {
  /** Most tokens the native loop may generate; 0 keeps them all on the batched path. */
  nativeTokens: number;
  /** What a native run drafts from; asked whenever a native run starts. */
  nativeDrafts?: () => Promise<NativeDrafts | undefined>;
  /** Called when a native run ends, with the drafts it verified, how many it kept, and its passes' time. */
  onNativeDrafted?: (result: NativeDecodeResult) => void;
  /**
   * Stops and restarts the batched path's drafting. A batched step may leave a draft evaluated but
   * not yet checked: before going back to the native loop, the generation lets the next batched
   * steps check it with nothing new drafted, since dropping it instead needs a claim (which sends
   * every native run back to the batched path, where each would leave a draft of its own).
   */
  drafting?: { pause(): void; resume(): void };
  /** A call's grammar: its tokens are sampled on the batched path. */
  grammar?: LlamaGrammarEvaluationState;
  /** The sequence's tokens from here on are erased first (they are generated again). */
  eraseFrom?: number;
}

/** What node-llama-cpp keeps of a batched draft it has evaluated but not yet checked. */
interface LoadedPredictions {
  readonly _loadedTokenPredictions: readonly unknown[];
}

/**
 * Where generated tokens come from. Greedy generations without a grammar decode in the addon's
 * native loop, which steps all of them in one batch (as llama-server's slots share one). Whatever
 * else needs the context — a request evaluating its prompt, a generation that samples or writes
 * under a grammar (node-llama-cpp's batched path), an erase — {@link claim}s it: the native runs
 * stop after their step and go on in the batched path, beside it, and return to the native loop
 * once no claim is left.
 */
export class TokenDecoder {
  /** Native runs started so far, and how many of them verified drafts (tests read them). */
  readonly nativeRunCounts = { runs: 0, withDrafts: 0 };
  /** Native runs in progress: together they hold the context until they stop. */
  private readonly nativeRuns = new Set<NativeDecodeRun>();
  private claims = 0;
  /**
   * Generations that would decode natively, waiting for a batch on the batched path (a claim sent
   * them there). No native run starts meanwhile: the batch would wait for it.
   */
  private batched = 0;
  private waiting: (() => void)[] = [];

  /** `nativeLoop`: the addon has the native loop and the engine may use it. */
  constructor(private readonly nativeLoop: boolean) {}

  /**
   * The context is needed outside the native loop until the returned function is called (calling
   * it again does nothing): native runs stop now, and none starts meanwhile.
   */
  claim(): () => void {
    this.claims++;
    for (const run of this.nativeRuns) run.stop();
    this.changed();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.claims--;
      this.changed();
    };
  }

  /**
   * The generated tokens after `lastToken`. Up to `nativeTokens` of them come from the native loop
   * while no claim holds the context and no grammar applies, with drafts from `nativeDrafts()`
   * verified there; the rest from the batched path.
   */
  async *decode(
    sequence: LlamaContextSequence,
    lastToken: Token,
    request: GenerateRequest,
    { nativeTokens, nativeDrafts, onNativeDrafted, drafting, grammar, eraseFrom }: DecodeOptions,
  ): AsyncGenerator<Token> {
    let next = lastToken;
    let nativeLeft = this.nativeLoop && !grammar ? nativeTokens : 0;
    const unclaimed = () => nativeLeft > 0 && this.claims === 0;
    // Decoding that can never be native holds its claim throughout.
    const release = nativeLeft > 0 ? undefined : this.claim();
    let draftingPaused = false;
    try {
      if (eraseFrom !== undefined && eraseFrom < sequence.nextTokenIndex) {
        await this.exclusively(release, () =>
          sequence.eraseContextTokenRanges([{ start: eraseFrom, end: sequence.nextTokenIndex }]),
        );
      }
      for (let entering = true; ; entering = false) {
        // Generations that a claim sent to the batched path may still wait there for a step when
        // it ends: one entering now takes that step with them (one pass for all) instead of a step
        // of its own after it. (Prompts evaluated in one batch end their claims one by one: all but
        // the last generation go to the batched path.)
        const joining = entering && unclaimed() && this.batched > 0;
        if (!joining) {
          while (unclaimed() && this.batched > 0) await this.change();
          if (unclaimed() && hasLoadedPredictions(sequence)) {
            // A batched step's unchecked draft: dropped (while no native run holds the context).
            const index = sequence.nextTokenIndex;
            await this.exclusively(release, () =>
              sequence.eraseContextTokenRanges([{ start: index, end: index + 1 }]),
            );
          }
          // Getting the drafts ready is asynchronous: a claim may come meanwhile.
          const drafts = unclaimed() ? await nativeDrafts?.() : undefined;
          if (unclaimed() && this.batched === 0) {
            const run = new NativeDecodeRun(sequence, next, Math.min(nativeLeft, 2 ** 31 - 1), drafts);
            this.nativeRunCounts.runs++;
            if (drafts) this.nativeRunCounts.withDrafts++;
            this.nativeRuns.add(run);
            try {
              for await (const token of run) {
                next = token;
                nativeLeft--;
                yield token;
              }
            } finally {
              this.nativeRuns.delete(run);
              // Also when the consumer stopped early: the loop has stopped by now.
              const result = await run.finished.catch(() => undefined);
              if (result) onNativeDrafted?.(result);
            }
            if ((await run.finished).end !== "stopped") return;
            // Stopped by a claim: on in the batched path until none is left.
            continue;
          }
          if (unclaimed()) continue;
        }
        let backToNative = false;
        const counted = release === undefined;
        if (draftingPaused) {
          drafting?.resume();
          draftingPaused = false;
        }
        const tokens = sequence
          .evaluate([next], {
            temperature: request.temperature ?? 0,
            topP: request.topP,
            seed: request.seed,
            grammarEvaluationState: grammar,
          })
          [Symbol.asyncIterator]();
        try {
          for (;;) {
            // Counted only while it waits for a batch: a consumer that stops reading holds nothing.
            if (counted) this.batched++;
            let step: IteratorResult<Token>;
            try {
              step = await tokens.next();
            } finally {
              if (counted) {
                this.batched--;
                this.changed();
              }
            }
            if (step.done) break;
            next = step.value;
            nativeLeft--;
            yield next;
            if (!unclaimed()) continue;
            if (!drafting || !hasLoadedPredictions(sequence)) {
              backToNative = true;
              break;
            }
            if (!draftingPaused) {
              drafting.pause();
              draftingPaused = true;
            }
          }
        } finally {
          await tokens.return?.();
        }
        if (!backToNative) return;
      }
    } finally {
      if (draftingPaused) drafting?.resume();
      this.changed();
      release?.();
    }
  }

  /** Runs `operation` under a claim of its own, unless `held` is one already. */
  private async exclusively<T>(held: (() => void) | undefined, operation: () => Promise<T>): Promise<T> {
    const release = held ? undefined : this.claim();
    try {
      return await operation();
    } finally {
      release?.();
    }
  }

  /** Resolves at the next claim, release, or generation leaving the batched path. */
  private change(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private changed(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }
}

function hasLoadedPredictions(sequence: LlamaContextSequence): boolean {
  return ((sequence as unknown as Partial<LoadedPredictions>)._loadedTokenPredictions?.length ?? 0) > 0;
}
