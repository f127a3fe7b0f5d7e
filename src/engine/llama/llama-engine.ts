import type {
  ChatWrapper,
  Llama,
  LlamaContext,
  LlamaContextSequence,
  LlamaModel,
  Token,
} from "node-llama-cpp";
import { SparkError } from "../../protocol/errors.js";
import type {
  DraftOptions,
  DraftRequest,
  DraftResult,
  Engine,
  EngineEvent,
  EngineInfo,
  GenerateOptions,
  GenerateRequest,
} from "../engine.js";
import { type BackendInfo, backendInfoOf } from "./backend-info.js";
import type { BatchArrivals } from "./internal/batch-arrivals.js";
import { type RenderedPrompt, renderPrompt } from "./internal/chat-rendering.js";
import { done } from "./internal/done-event.js";
import { type DraftSetup, type LoadedEngine, loadEngine } from "./internal/engine-loading.js";
import { GrammarCache } from "./internal/grammar-cache.js";
import { IdleMemoryRelease, releaseUnusedMemory } from "./internal/memory-release.js";
import { canGenerateNatively } from "./internal/native-decode.js";
import { prefillPrompt } from "./internal/prompt-prefill.js";
import { generateReply, type Reply } from "./internal/reply-generation.js";
import { replySpan } from "./internal/reply-span.js";
import { copySequencePrefix } from "./internal/sequence-copy.js";
import { restoreGeneratedTokens, SequencePool, type Slot } from "./internal/sequence-pool.js";
import { prefixToSave, renderSharedPrefix } from "./internal/shared-prefix.js";
import {
  createSequencePredictors,
  type SequencePredictors,
  Speculation,
  type SpeculationSettings,
} from "./internal/speculation.js";
import { TokenDecoder } from "./internal/token-decoder.js";
import { type CallSyntax, callSyntaxOf } from "./internal/tool-call-syntax.js";
import { TypeAhead } from "./internal/type-ahead.js";
import { WarmEventLoop } from "./internal/warm-event-loop.js";
import type { KvStateCache } from "./kv-state-cache.js";
import type { LlamaEngineOptions } from "./llama-engine-options.js";

export { defaultContextSize } from "./internal/engine-loading.js";
export type { LlamaEngineOptions } from "./llama-engine-options.js";

/**
 * Which native binary runs: a local build of Spark's patched addon (`npm run build:engine`), which
 * generates greedy tokens in a native loop, or node-llama-cpp's prebuilt binary.
 */
export interface EngineBinary {
  build: "local" | "prebuilt";
  /** Greedy generation runs in the addon's native loop (only the patched local build has it). */
  nativeLoop: boolean;
}

/**
 * Embedded llama.cpp through node-llama-cpp: the default engine. Each request gets a context
 * sequence from the pool, has its prompt evaluated (reusing cached prefixes), then its reply
 * generated (internal/reply-generation.ts).
 */
export class LlamaEngine implements Engine {
  readonly info: EngineInfo;
  readonly threads: number;
  /** The draft model's file, when one is loaded. */
  readonly draftModelPath: string | undefined;
  readonly binary: EngineBinary;
  /** Where it computes: backend (cpu, cuda, vulkan, metal) and CPU variant. */
  readonly backend: BackendInfo;
  /** How this model writes function calls. */
  readonly callSyntax: CallSyntax;
  readonly model: LlamaModel;
  readonly chatWrapper: ChatWrapper;
  private readonly pool: SequencePool;
  private readonly decoder: TokenDecoder;
  private readonly predictors = new Map<LlamaContextSequence, SequencePredictors>();
  private readonly grammars: GrammarCache;
  private readonly warmLoop = new WarmEventLoop();
  private readonly memoryRelease: IdleMemoryRelease;
  private readonly typeAhead: TypeAhead;
  private disposed = false;

  private readonly llama: Llama;
  private readonly context: LlamaContext;
  private readonly prefillChunk: number;
  private readonly speculation: SpeculationSettings;
  private readonly draftSetup: DraftSetup | undefined;
  private readonly kvStates: KvStateCache | undefined;
  private readonly arrivals: BatchArrivals;

  private constructor(parts: LoadedEngine) {
    const { model, context, chatWrapper, draftSetup } = parts;
    this.llama = parts.llama;
    this.model = model;
    this.context = context;
    this.chatWrapper = chatWrapper;
    this.prefillChunk = parts.prefillChunk;
    this.speculation = {
      draftTokens: parts.draftTokens,
      draftTokenCost: parts.draftTokenCost,
      chunk: parts.prefillChunk,
    };
    this.draftSetup = draftSetup;
    this.kvStates = parts.kvStates;
    this.arrivals = parts.arrivals;
    this.info = { id: parts.id, engine: "llama", contextSize: context.contextSize };
    this.threads = context.currentThreads;
    this.draftModelPath = draftSetup?.path;
    const sequences = Array.from({ length: context.totalSequences }, () => {
      const predictors = createSequencePredictors(draftSetup, parts.draftTokens);
      const sequence = context.getSequence({ tokenPredictor: predictors.switch });
      this.predictors.set(sequence, predictors);
      return sequence;
    });
    this.pool = new SequencePool(sequences, async (target, source, prefix) => {
      const from = this.predictors.get(source.sequence)?.draft?.sequence;
      const to = this.predictors.get(target.sequence)?.draft?.sequence;
      if (!from || !to) return;
      // The draft sequence may hold less of the prefix (it evaluates the prompt only when it drafts).
      const shared = from.compareContextTokens(prefix as Token[]).firstDifferentIndex;
      if (shared > to.compareContextTokens(prefix as Token[]).firstDifferentIndex)
        await copySequencePrefix(to, from, shared);
    });
    this.typeAhead = new TypeAhead({
      model,
      wrapper: chatWrapper,
      pool: this.pool,
      contextSize: context.contextSize,
      chunk: parts.draftChunk,
    });
    this.binary = {
      build: parts.llama.buildType === "localBuild" ? "local" : "prebuilt",
      nativeLoop: parts.nativeLoop && canGenerateNatively(sequences[0]!),
    };
    this.decoder = new TokenDecoder(this.binary.nativeLoop);
    this.grammars = new GrammarCache(parts.llama, model);
    this.backend = backendInfoOf(parts.llama);
    this.callSyntax = callSyntaxOf(model, chatWrapper);
    this.memoryRelease = new IdleMemoryRelease(
      () => releaseUnusedMemory(context),
      parts.releaseMemoryAfterIdleMs,
    );
  }

  static async create(options: LlamaEngineOptions): Promise<LlamaEngine> {
    return new LlamaEngine(await loadEngine(options));
  }

  /** Resolves once the engine has next given back the memory it no longer uses (tests wait for it). */
  memoryReleased(): Promise<void> {
    return this.memoryRelease.next();
  }

  /** Native runs started so far, and how many of them verified drafts (tests read them). */
  get nativeRunCounts(): { readonly runs: number; readonly withDrafts: number } {
    return this.decoder.nativeRunCounts;
  }

  async *generate(request: GenerateRequest, options: GenerateOptions = {}): AsyncGenerator<EngineEvent> {
    // Real requests come first: running drafts stop (within one chunk) and give their sequences back.
    const resume = await this.typeAhead.preempt();
    try {
      yield* this.generateNow(request, options);
    } finally {
      resume();
    }
  }

  /** Type-ahead prefill (see {@link TypeAhead}): never waits for a busy model. */
  async draft(request: DraftRequest, options: DraftOptions = {}): Promise<DraftResult> {
    if (this.disposed) throw new SparkError("model_not_loaded", "The model has been unloaded.");
    return this.typeAhead.draft(request, options.signal);
  }

  private async *generateNow(
    request: GenerateRequest,
    options: GenerateOptions,
  ): AsyncGenerator<EngineEvent> {
    if (this.disposed) throw new SparkError("model_not_loaded", "The model has been unloaded.");
    this.memoryRelease.busy();
    const started = performance.now();
    const signal = options.signal;
    const rendered = request.prefillOnly
      ? renderSharedPrefix(this.model, this.chatWrapper, request)
      : renderPrompt(this.model, this.chatWrapper, request.messages, request.tools);
    const contextSize = this.info.contextSize;
    if (rendered.tokens.length >= contextSize) {
      throw new SparkError(
        "context_length_exceeded",
        `The input is ${rendered.tokens.length} tokens; this model's context holds ${contextSize}.`,
        { param: "input" },
      );
    }

    // Taking a sequence and evaluating the prompt need the context: native runs give way meanwhile
    // (not while the request waits for a free sequence).
    let prefilling = () => {};
    // From taking a sequence to queuing the prompt's first evaluation, the next batch waits for it.
    let arrived = () => {};
    let slot: Slot;
    try {
      slot = await this.pool.acquire(rendered.tokens, request.conversation, signal, () => {
        prefilling = this.decoder.claim();
        arrived = this.arrivals.arrive();
      });
    } catch (error) {
      arrived();
      prefilling();
      if (error instanceof SparkError && error.code === "cancelled") {
        const inputTokens = rendered.tokens.length;
        yield done({
          stopReason: "cancelled",
          inputTokens,
          cachedInputTokens: 0,
          started,
          prefilled: started,
        });
        return;
      }
      throw error;
    }
    try {
      yield* this.run(slot, request, rendered, options, started, prefilling, arrived);
    } finally {
      arrived();
      prefilling();
      this.pool.release(slot);
      if (this.pool.idle) this.memoryRelease.idle();
    }
  }

  /** One request on its sequence: the prompt evaluated, then the reply generated. */
  private async *run(
    slot: Slot,
    request: GenerateRequest,
    rendered: RenderedPrompt,
    { signal, onPrefillProgress }: GenerateOptions,
    started: number,
    prefilled: () => void,
    queued: () => void,
  ): AsyncGenerator<EngineEvent> {
    const { sequence } = slot;
    const { model, chatWrapper } = this;
    const restored = restoreGeneratedTokens(rendered.tokens, slot.spans);
    const tokens = restored.tokens;
    slot.spans = restored.applied;
    const predictors = this.predictors.get(sequence)!;
    const speculation = new Speculation(predictors, sequence, model, request, this.speculation);
    const prefillOnly = request.prefillOnly === true;
    const { reused, complete } = await prefillPrompt(sequence, tokens, {
      prefillOnly,
      chunk: this.prefillChunk,
      kvStates: this.kvStates,
      prefixToSave: (range) => prefixToSave(model, chatWrapper, request, tokens, range),
      drafter: speculation.drafter,
      signal,
      onProgress: onPrefillProgress,
      onQueued: queued,
    });
    queued();
    prefilled();
    const prompt = {
      inputTokens: tokens.length,
      cachedInputTokens: reused,
      started,
      prefilled: performance.now(),
    };
    if (!complete || prefillOnly || signal?.aborted) {
      yield done({ ...prompt, stopReason: complete && prefillOnly ? "stop" : "cancelled" });
      return;
    }

    // Only while tokens come: in a prompt's evaluation the timer's wake-ups take a core from its
    // threads (1.055x the time of a 2,300-token prompt on the 135M shape, 2 cores).
    this.warmLoop.acquire();
    let reply: Reply;
    try {
      reply = yield* generateReply({
        model,
        sequence,
        contextSize: this.info.contextSize,
        decoder: this.decoder,
        grammars: this.grammars,
        speculation,
        request,
        prompt: tokens,
        stopTriggers: rendered.stopTriggers,
        callSyntax: this.callSyntax,
        signal,
      });
    } finally {
      this.warmLoop.release();
    }
    const span = replySpan(model, chatWrapper, request, tokens, reply);
    if (span) slot.spans.push(span);
    const { stopReason, predictions, firstTokenAt, lastTokenAt } = reply;
    yield done({
      ...prompt,
      stopReason,
      outputTokens: reply.generated.length,
      predictions,
      firstTokenAt,
      lastTokenAt,
    });
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.memoryRelease[Symbol.dispose]();
    await this.typeAhead.preempt();
    await this.context.dispose();
    await this.draftSetup?.context.dispose();
    await this.draftSetup?.model.dispose();
    await this.model.dispose();
    await this.llama.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
