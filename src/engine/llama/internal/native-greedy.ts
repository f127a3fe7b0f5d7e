import type { LlamaContextSequence, Token } from "node-llama-cpp";

/**
 * What Spark's patch of node-llama-cpp adds to a context sequence (patches/node-llama-cpp+*.patch):
 * greedy generation in one native loop on its own thread, each token handed to JavaScript without
 * the loop waiting for it. Present only with a local build of the patched addon
 * (`npm run build:engine`); the prebuilt binaries lack it.
 */
interface NativeGreedySequence {
  readonly _sparkCanGenerateNatively?: boolean;
  _sparkGenerateGreedy(
    firstToken: Token,
    maxTokens: number,
    onToken: (token: Token) => void,
  ): Promise<{ end: NativeGreedyEnd; generated: number }>;
  _sparkStopNativeGeneration(): void;
}

/** Why a native run ended: asked to stop, an end-of-generation token, or `maxTokens` tokens. */
export type NativeGreedyEnd = "stopped" | "eog" | "length";

export function canGenerateNatively(sequence: LlamaContextSequence): boolean {
  return (sequence as unknown as NativeGreedySequence)._sparkCanGenerateNatively === true;
}

/**
 * One native greedy run as an async iterable of tokens. The loop runs ahead of the consumer: tokens
 * queue here until read. Breaking out of the iteration stops the loop; `finished` resolves once the
 * loop has stopped and the sequence's state holds every token it decoded.
 */
export class NativeGreedyRun implements AsyncIterable<Token> {
  /** How the loop ended; resolves after the last token was queued. */
  readonly finished: Promise<NativeGreedyEnd>;
  private readonly queue: Token[] = [];
  private wake: (() => void) | undefined;
  private ended = false;

  constructor(
    private readonly sequence: LlamaContextSequence,
    firstToken: Token,
    maxTokens: number,
  ) {
    const native = sequence as unknown as NativeGreedySequence;
    this.finished = native
      ._sparkGenerateGreedy(firstToken, maxTokens, (token) => {
        this.queue.push(token);
        this.wakeReader();
      })
      .then((result) => result.end)
      .finally(() => {
        this.ended = true;
        this.wakeReader();
      });
  }

  /** Asks the loop to stop after the token it is decoding; safe to call at any time. */
  stop(): void {
    if (!this.ended) (this.sequence as unknown as NativeGreedySequence)._sparkStopNativeGeneration();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Token> {
    try {
      while (true) {
        const token = this.queue.shift();
        if (token !== undefined) {
          yield token;
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
