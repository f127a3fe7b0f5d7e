import path from "node:path";
import {
  type ChatWrapper,
  getLlama,
  type Llama,
  type LlamaContext,
  LlamaLogLevel,
  type LlamaModel,
  resolveChatWrapper,
} from "node-llama-cpp";
import { SparkError } from "../../../protocol/errors.js";
import { KvStateCache, kvStateKeyOf } from "../kv-state-cache.js";
import type { LlamaEngineOptions } from "../llama-engine-options.js";
import { BatchArrivals } from "./batch-arrivals.js";
import { releaseTokenizerTexts } from "./memory-release.js";
import { physicalCoreCount } from "./physical-cores.js";
import { withSparkCallSyntax } from "./tool-call-syntax.js";
import { vocabularyMismatch } from "./vocabulary-match.js";

/** The draft model, when one is loaded: its context has a sequence for each of the main context's. */
export interface DraftSetup {
  path: string;
  model: LlamaModel;
  context: LlamaContext;
  minConfidence: number;
}

/** What {@link loadEngine} loaded, with the engine options' defaults applied. */
export interface LoadedEngine {
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  chatWrapper: ChatWrapper;
  prefillChunk: number;
  draftTokens: number;
  draftTokenCost: number | undefined;
  id: string;
  draftSetup: DraftSetup | undefined;
  kvStates: KvStateCache | undefined;
  draftChunk: number;
  nativeLoop: boolean;
  releaseMemoryAfterIdleMs: number;
  /** Requests on their way to the context's next batch, which waits for them. */
  arrivals: BatchArrivals;
}

/**
 * Tokens per conversation when none is set: the model's training context, at least 4096 and at
 * most 32768. Below 4096 the agent's prompt and tools alone can fill the context (2,625 tokens in
 * stories260K's 512-token vocabulary, whose training context is 2,048), so not one message would
 * fit; a toy model answers past its training context, if worse. With the local build on Linux the
 * KV cache is resident as it is written (patches/llama.cpp), so a context not used costs no memory.
 */
export function defaultContextSize(trained: number): number {
  return Math.min(Math.max(trained, 4096), 32768);
}

/**
 * Loads the backend, the model (and the draft model) and creates their contexts; on failure
 * everything loaded so far is disposed and a `model_unavailable` error names the file.
 */
export async function loadEngine(options: LlamaEngineOptions): Promise<LoadedEngine> {
  const cost = options.draftTokenCost;
  if (cost !== undefined && !(cost > 0 && cost <= 1)) {
    throw new SparkError(
      "invalid_request",
      `draftTokenCost is a share of a decode step, above 0 and at most 1; got ${cost}.`,
    );
  }
  const threads = options.threads ?? physicalCoreCount();
  const llama = await getLlama({
    gpu: options.gpu ?? "auto",
    build: "never",
    logLevel: LlamaLogLevel.error,
    maxThreads: threads,
  });
  let model: LlamaModel | undefined;
  let draftModel: LlamaModel | undefined;
  let loading = options.modelPath;
  try {
    model = await llama.loadModel({
      modelPath: options.modelPath,
      onLoadProgress: options.onLoadProgress,
    });
    if (options.draftModelPath !== undefined) {
      loading = options.draftModelPath;
      draftModel = await llama.loadModel({ modelPath: options.draftModelPath });
      const mismatch = vocabularyMismatch(model, draftModel);
      if (mismatch) {
        throw new SparkError(
          "invalid_request",
          `The draft model ${options.draftModelPath} cannot draft for ${options.modelPath}: a draft ` +
            `model must share the main model's vocabulary (${mismatch}).`,
        );
      }
      loading = options.modelPath;
    }
    const contextSize = options.contextSize ?? defaultContextSize(model.trainContextSize);
    const sequences = options.sequences ?? 2;
    const batchSize = Math.min(512, contextSize);
    const arrivals = new BatchArrivals();
    const context = await model.createContext({
      contextSize,
      sequences,
      threads,
      batchSize,
      batching: { dispatchSchedule: arrivals.schedule },
    });
    let draft: DraftSetup | undefined;
    if (draftModel) {
      loading = options.draftModelPath!;
      // As large as the main context: the draft state follows each sequence's whole conversation,
      // so a later turn evaluates only its new tokens there too (a shorter window would slide).
      const draftContext = await draftModel.createContext({
        contextSize: context.contextSize,
        sequences: context.totalSequences,
        threads,
        batchSize,
      });
      draft = {
        path: options.draftModelPath!,
        model: draftModel,
        context: draftContext,
        minConfidence: options.draftMinConfidence ?? 0.75,
      };
    }
    const kvStates = options.kvStateCache
      ? new KvStateCache(options.kvStateCache, await kvStateKeyOf(llama, options.modelPath, context))
      : undefined;
    const wrapper = withSparkCallSyntax(resolveChatWrapper(model));
    releaseTokenizerTexts(model);
    if (draftModel) releaseTokenizerTexts(draftModel);
    const id = options.id ?? path.basename(options.modelPath).replace(/\.gguf$/i, "");
    return {
      llama,
      model,
      context,
      chatWrapper: wrapper,
      prefillChunk: options.prefillChunk ?? batchSize,
      draftTokens: options.draftTokens ?? 16,
      draftTokenCost: options.draftTokenCost,
      id,
      draftSetup: draft,
      kvStates,
      draftChunk: options.draftChunk ?? 32,
      nativeLoop: options.nativeLoop ?? true,
      releaseMemoryAfterIdleMs: options.releaseMemoryAfterIdleMs ?? 2000,
      arrivals,
    };
  } catch (error) {
    // Disposing a model disposes its contexts.
    await draftModel?.dispose();
    await model?.dispose();
    await llama.dispose();
    if (error instanceof SparkError) throw error;
    throw new SparkError("model_unavailable", `Could not load ${loading}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
