import type { ChatWrapper, LlamaModel, Token } from "node-llama-cpp";
import { SparkError } from "../../../protocol/errors.js";
import type { DraftRequest, DraftResult } from "../../engine.js";
import { draftPrefix } from "./draft-prefix.js";
import { restoreGeneratedTokens, type SequencePool, type Slot } from "./sequence-pool.js";

export interface TypeAheadOptions {
  model: LlamaModel;
  wrapper: ChatWrapper;
  pool: SequencePool;
  contextSize: number;
  /** Tokens evaluated between cancellation checks: how long a real request may wait for a draft. */
  chunk: number;
}

interface RunningDraft {
  controller: AbortController;
  finished: Promise<unknown>;
}

/**
 * Type-ahead prefill on the llama engine, at the lowest priority: a draft runs only while no real
 * request does, on an idle sequence, and every real request first stops the running drafts (each
 * within one chunk) and waits until they have given their sequences back. A draft only adds KV
 * state: the real request's prompt is rendered as always, and the engine's prefix reuse compares
 * tokens, so whatever of a draft differs from it is erased and evaluated again.
 */
export class TypeAhead {
  private readonly running = new Set<RunningDraft>();
  private realRequests = 0;

  constructor(private readonly options: TypeAheadOptions) {}

  /**
   * A real request starts: drafts stop and none starts until the returned function is called.
   * Resolves once every running draft has released its sequence.
   */
  async preempt(): Promise<() => void> {
    this.realRequests++;
    const stopping = [...this.running];
    for (const draft of stopping) draft.controller.abort();
    await Promise.allSettled(stopping.map((draft) => draft.finished));
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.realRequests--;
    };
  }

  async draft(request: DraftRequest, signal?: AbortSignal): Promise<DraftResult> {
    if (this.realRequests > 0 || signal?.aborted)
      return { outcome: "busy", prefixTokens: 0, evaluatedTokens: 0 };
    const { model, wrapper, pool, contextSize } = this.options;
    const prefix = draftPrefix(model, wrapper, request);
    if (prefix.length >= contextSize) {
      throw new SparkError(
        "context_length_exceeded",
        `The draft is ${prefix.length} tokens; this model's context holds ${contextSize}.`,
        { param: "draft" },
      );
    }
    const slot = pool.tryAcquire(prefix, request.conversation);
    if (!slot) return { outcome: "busy", prefixTokens: prefix.length, evaluatedTokens: 0 };
    const controller = new AbortController();
    const stop = signal ? AbortSignal.any([controller.signal, signal]) : controller.signal;
    const evaluation = this.evaluate(slot, prefix, stop).finally(() => pool.release(slot));
    const running: RunningDraft = { controller, finished: evaluation };
    this.running.add(running);
    try {
      return await evaluation;
    } finally {
      this.running.delete(running);
    }
  }

  /** Evaluates the prefix beyond what the sequence already holds, in chunks, checking `signal` between them. */
  private async evaluate(slot: Slot, prefix: Token[], signal: AbortSignal): Promise<DraftResult> {
    const { sequence } = slot;
    // The same substitution the real request makes, so the tokens it compares are the ones kept here.
    const tokens = restoreGeneratedTokens(prefix, slot.spans).tokens;
    const held = sequence.compareContextTokens(tokens).firstDifferentIndex;
    let at = held;
    if (at < tokens.length && at < sequence.nextTokenIndex) {
      await sequence.eraseContextTokenRanges([{ start: at, end: sequence.nextTokenIndex }]);
    }
    while (at < tokens.length) {
      if (signal.aborted)
        return { outcome: "cancelled", prefixTokens: tokens.length, evaluatedTokens: at - held };
      const end = Math.min(tokens.length, at + this.options.chunk);
      await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(at, end));
      at = end;
    }
    return { outcome: "evaluated", prefixTokens: tokens.length, evaluatedTokens: at - held };
  }
}
