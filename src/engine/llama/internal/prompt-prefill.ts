import type { LlamaContextSequence, Token } from "node-llama-cpp";
import type { KvStateCache } from "../kv-state-cache.js";
import type { DraftModelPredictor } from "./draft-model-predictor.js";

export interface PromptPrefillOptions {
  /** Evaluate every prompt token (a pre-warm); else all but the last, which generation evaluates. */
  prefillOnly: boolean;
  /** Prompt tokens evaluated between cancellation checks. */
  chunk: number;
  /** Saved KV states: a long prefix is restored from them, and the prefix worth saving saved. */
  kvStates: KvStateCache | undefined;
  /** Where the prefix worth saving ends, when it ends in the range `after` to `upTo`. */
  prefixToSave: (range: { after: number; upTo: number }) => number | undefined;
  /** The draft model that drafts for this request: it evaluates the prompt too. */
  drafter: DraftModelPredictor | undefined;
  signal?: AbortSignal;
  /** Called after each chunk with the tokens evaluated so far and in all. */
  onProgress?: (evaluated: number, total: number) => void;
  /** Called once the first chunk's evaluation is queued (the batch it waits for may then go). */
  onQueued?: () => void;
}

export interface PromptPrefill {
  /** Prompt tokens whose KV state was already in the sequence (or restored from disk). */
  reused: number;
  /** False when cancelled before the whole prompt was evaluated. */
  complete: boolean;
}

/**
 * Evaluates a prompt into its sequence without generating: the longest cached prefix is reused
 * (the last prompt token is always left to generation, which needs its logits), the rest is
 * evaluated in chunks with a cancellation check between them.
 */
export async function prefillPrompt(
  sequence: LlamaContextSequence,
  tokens: Token[],
  options: PromptPrefillOptions,
): Promise<PromptPrefill> {
  const { prefillOnly, chunk, drafter, signal } = options;
  const prefillEnd = prefillOnly ? tokens.length : tokens.length - 1;
  let reused = sequence.compareContextTokens(tokens).firstDifferentIndex;
  const kvStates =
    options.kvStates && prefillEnd - reused >= options.kvStates.minTokens ? options.kvStates : undefined;
  if (kvStates) {
    await kvStates.restore(sequence, tokens, { after: reused, upTo: prefillEnd });
    reused = sequence.compareContextTokens(tokens).firstDifferentIndex;
  }
  if (!prefillOnly && reused >= tokens.length) reused = tokens.length - 1;
  if (reused < sequence.nextTokenIndex) {
    await sequence.eraseContextTokenRanges([{ start: reused, end: sequence.nextTokenIndex }]);
  }

  // Where the prefix worth saving ends, when this run evaluates it: the prefill stops there once.
  const saveAt = kvStates && options.prefixToSave({ after: reused, upTo: prefillEnd });
  for (let at = reused; at < prefillEnd; ) {
    if (signal?.aborted) return { reused, complete: false };
    const end = Math.min(prefillEnd, at + chunk, saveAt && at < saveAt ? saveAt : prefillEnd);
    const evaluated = sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(at, end));
    options.onQueued?.();
    await evaluated;
    if (end === saveAt) await kvStates?.save(sequence);
    // The draft model evaluates the prompt too, after the main model (never beside it: on a CPU
    // they would share the cores); it may be further behind, when earlier turns did not use it.
    await drafter?.catchUp(tokens, end, chunk, signal);
    options.onProgress?.(end - reused, prefillEnd - reused);
    at = end;
  }
  // Also when the main model had the whole prompt cached.
  if (!signal?.aborted) await drafter?.catchUp(tokens, prefillEnd, chunk, signal);
  return { reused, complete: true };
}
