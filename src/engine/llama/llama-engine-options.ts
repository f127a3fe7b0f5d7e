import type { KvStateCacheOptions } from "./kv-state-cache.js";

/** How LlamaEngine.create loads a model (and engine-loading.ts reads it). */
export interface LlamaEngineOptions {
  modelPath: string;
  /** The id clients use in `model`. Default: the file name without `.gguf`. */
  id?: string;
  /** Tokens per conversation. Default: the model's training context, at least 4096 and at most 32768. */
  contextSize?: number;
  /**
   * Conversations decoded concurrently (context sequences). With more than one, a new conversation
   * whose prompt starts like another's (a fork) copies that prefix's KV cells into a sequence of
   * its own (see internal/sequence-pool.ts). Default: 2.
   */
  sequences?: number;
  /** CPU threads. Default: the number of physical cores (never the library's default). */
  threads?: number;
  /** `"auto"` uses a GPU when a prebuilt backend for it is installed. Default: `"auto"`. */
  gpu?: "auto" | false;
  /**
   * Prompt tokens evaluated between cancellation checks: llama.cpp cannot stop inside one
   * evaluation, so a cancel or steer during a prompt lands after at most this many tokens. Default:
   * the context's batch size (512), llama-server's micro-batch: smaller evaluations cost prompt speed
   * (128-token chunks took 54 s for a 2,000-token prompt where 512 took 35 s, SmolLM2-135M on 2
   * cores), and llama-server checks only between its 2,048-token batches.
   */
  prefillChunk?: number;
  /**
   * Most draft tokens verified per forward pass with Predicted Outputs (half that for prompt
   * lookup). Verifying k tokens costs less than k steps: a pass over 17 tokens costs 4-8 decode
   * steps of the 135M and 0.5B shapes on 2 CPU cores (`spark bench --scenario spec`), far fewer on
   * a GPU, so long drafts pay off when most of them match; drafts shrink after a miss. Default: 16.
   */
  draftTokens?: number;
  /**
   * A smaller GGUF with the same vocabulary that drafts tokens for requests without a prediction
   * (with prompt lookup, where the conversation has nothing to copy), up to `draftTokens` per
   * forward pass. Greedy output is unchanged. It pays off
   * mainly on a GPU: on a CPU its own decode steps cost about as much as they save. Default: none.
   */
  draftModelPath?: string;
  /**
   * The draft model stops drafting after a token it gives less than this probability (that token is
   * still drafted, as in llama.cpp). 0 always drafts `draftTokens`. Default: 0.75 (llama-server's).
   */
  draftMinConfidence?: number;
  /**
   * In the native loop, what verifying one draft token costs as a share of a decode step. Drafts
   * are as long as yields the most tokens per unit of time at the source's recent acceptance
   * (draft-length.ts), none where a token costs as much as it is likely to return: on a GPU a token
   * more costs next to nothing and drafts are long; on a CPU it can cost most of a step. Default:
   * measured end to end from the model's native runs (before that, by the loop for each 128
   * positions of context).
   */
  draftTokenCost?: number;
  /**
   * Tokens a type-ahead draft evaluates between cancellation checks: a real request waits at most
   * this long for a running draft to stop (the tokens are usually its own prefix). Default: 32.
   */
  draftChunk?: number;
  /**
   * Save the KV state of long prompt prefixes (a `generate: false` pre-warm; a new conversation's
   * system prompt and tools) to disk, and restore the longest saved prefix of a later request's
   * prompt, also after a restart. Default: off.
   */
  kvStateCache?: KvStateCacheOptions;
  /**
   * Generate greedy tokens in the addon's native loop, where the local build of the patched addon
   * has one (`npm run build:engine`) and no other generation runs; Predicted Outputs and prompt
   * lookup drafts are verified there too. `false` keeps every token on node-llama-cpp's batched
   * path. Same tokens either way. Default: true.
   */
  nativeLoop?: boolean;
  /**
   * Milliseconds without a request in flight after which the engine gives back the memory it
   * holds but no longer uses (V8's collection, then glibc's free pages; 60-90 ms of the main
   * thread). Default: 2000.
   */
  releaseMemoryAfterIdleMs?: number;
  /** Called with load progress from 0 to 1. */
  onLoadProgress?: (fraction: number) => void;
}
