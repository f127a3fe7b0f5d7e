import type { LlamaContextSequence, Token } from "node-llama-cpp";

/**
 * What a native run drafts from; each draft is verified in the same forward pass as the token
 * before it, and is at most `maxDraft` tokens.
 */
export interface NativeDrafts {
  maxDraft: number;
  /** What verifying a draft token costs, as a share of a decode step; measured when not given. */
  tokenCost?: number;
  /** Predicted Outputs: the text the output is expected to be. */
  prediction?: string;
  /** The output starts here, at the prediction's start; else its place is found from `recent`. */
  fromStart?: boolean;
  /** The end of the output so far (up to 64 characters). */
  recent?: string;
  /**
   * Prompt lookup: the conversation so far (ending with the token the run starts from). Drafts what
   * follows the longest recent run of at least `minPattern` tokens that occurred earlier in it.
   */
  history?: Uint32Array;
  minPattern?: number;
}

/** Why a native run ended: asked to stop, an end-of-generation token, or `maxTokens` tokens. */
export type NativeDecodeEnd = "stopped" | "eog" | "length";

/**
 * How a native run ended, how many draft tokens it verified and how many of them it kept, and
 * its forward passes (one hand-over of tokens each) and the milliseconds from its start to the
 * last of them.
 */
export interface NativeDecodeResult {
  end: NativeDecodeEnd;
  drafted: number;
  accepted: number;
  passes: number;
  ms: number;
}

/**
 * What Spark's patch of node-llama-cpp adds to a context sequence (patches/node-llama-cpp+*.patch):
 * greedy generation in one native loop on its own thread, drafts verified in the same loop, each
 * step's tokens handed to JavaScript without the loop waiting for them. Present only with a local
 * build of the patched addon (`npm run build:engine`); the prebuilt binaries lack it.
 */
interface NativeDecodeSequence {
  readonly _sparkCanGenerateNatively?: boolean;
  _sparkGenerateGreedy(
    firstToken: Token,
    maxTokens: number,
    onTokens: (tokens: Token[]) => void,
    drafts?: NativeDrafts,
  ): Promise<{ generated: number } & NativeDecodeResult>;
  _sparkStopNativeGeneration(): void;
}

export function canGenerateNatively(sequence: LlamaContextSequence): boolean {
  return (sequence as unknown as NativeDecodeSequence)._sparkCanGenerateNatively === true;
}

/**
 * One native greedy run as an async iterable of tokens. The loop runs ahead of the consumer: tokens
 * queue here until read. Breaking out of the iteration stops the loop; `finished` resolves once the
 * loop has stopped and the sequence's state holds every token it decoded and kept.
 */
export class NativeDecodeRun implements AsyncIterable<Token> {
  /** How the loop ended; resolves after the last token was queued. */
  readonly finished: Promise<NativeDecodeResult>;
  private readonly queue: Token[] = [];
  private read = 0;
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(
    private readonly sequence: LlamaContextSequence,
    firstToken: Token,
    maxTokens: number,
    drafts?: NativeDrafts,
  ) {
    const native = sequence as unknown as NativeDecodeSequence;
    const started = performance.now();
    let passes = 0;
    let lastPass = started;
    this.finished = native
      ._sparkGenerateGreedy(
        firstToken,
        maxTokens,
        (tokens) => {
          passes++;
          lastPass = performance.now();
          this.queue.push(...tokens);
          this.wakeReader();
        },
        drafts,
      )
      .then(({ end, drafted, accepted }) => ({ end, drafted, accepted, passes, ms: lastPass - started }))
      .finally(() => {
        this.ended = true;
        this.wakeReader();
      });
  }

  /** Asks the loop to stop after the step it is decoding; safe to call at any time. */
  stop(): void {
    if (!this.ended) (this.sequence as unknown as NativeDecodeSequence)._sparkStopNativeGeneration();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Token> {
    try {
      while (true) {
        if (this.read < this.queue.length) {
          yield this.queue[this.read++]!;
          continue;
        }
        if (this.ended) break;
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
      }
      await this.finished;
    } finally {
      this.stop();
      await this.finished.catch(() => undefined);
    }
  }

  private wakeReader(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
