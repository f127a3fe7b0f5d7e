import path from "node:path";
import {
  type ChatWrapper,
  getLlama,
  type Llama,
  type LlamaContext,
  type LlamaContextSequence,
  LlamaGrammar,
  LlamaGrammarEvaluationState,
  LlamaLogLevel,
  type LlamaModel,
  resolveChatWrapper,
  type Token,
} from "node-llama-cpp";
import type { ChatMessage, ToolCall } from "../../protocol/chat.js";
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
  GenerateResult,
  StopReason,
} from "../engine.js";
import { type BackendInfo, backendInfoOf } from "./backend-info.js";
import { callGrammar } from "./internal/call-grammar.js";
import { renderPrompt } from "./internal/chat-rendering.js";
import { DraftModelPredictor } from "./internal/draft-model-predictor.js";
import { FirstDraftPredictor } from "./internal/first-draft-predictor.js";
import { LookupPredictor, type LookupSettings } from "./internal/lookup-predictor.js";
import { canGenerateNatively, NativeDecodeRun, type NativeDrafts } from "./internal/native-decode.js";
import { OutputParser, type ParsedOutput } from "./internal/output-parser.js";
import { physicalCoreCount } from "./internal/physical-cores.js";
import { restoreGeneratedTokens, SequencePool, type Slot } from "./internal/sequence-pool.js";
import { SwitchingPredictor } from "./internal/switching-predictor.js";
import { type CallSyntax, callSyntaxOf, withSparkCallSyntax } from "./internal/tool-call-syntax.js";
import { TypeAhead } from "./internal/type-ahead.js";
import { vocabularyMismatch } from "./internal/vocabulary-match.js";
import { WarmEventLoop } from "./internal/warm-event-loop.js";
import { KvStateCache, type KvStateCacheOptions, kvStateKeyOf } from "./kv-state-cache.js";

export interface LlamaEngineOptions {
  modelPath: string;
  /** The id clients use in `model`. Default: the file name without `.gguf`. */
  id?: string;
  /** Tokens per conversation. Default: the model's training context, at most 32768. */
  contextSize?: number;
  /** Conversations decoded concurrently (context sequences). Default: 2. */
  sequences?: number;
  /** CPU threads. Default: the number of physical cores (never the library's default). */
  threads?: number;
  /** `"auto"` uses a GPU when a prebuilt backend for it is installed. Default: `"auto"`. */
  gpu?: "auto" | false;
  /**
   * Prompt tokens evaluated between cancellation checks. llama.cpp cannot stop inside one
   * evaluation, so this bounds how late a cancel or steer can be. Default: 128.
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
   * In the native loop, what verifying one draft token costs as a share of a decode step. A draft
   * stops before the token whose chance of being accepted (the source's recent acceptance, to the
   * power of its place in the draft) falls below this: on a GPU a token more costs next to nothing
   * and drafts are long; on a CPU it can cost most of a step. Default: measured as it decodes, for
   * each 128 positions of context.
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
  /** Called with load progress from 0 to 1. */
  onLoadProgress?: (fraction: number) => void;
}

/** The draft model, when one is loaded: its context has a sequence for each of the main context's. */
interface DraftSetup {
  path: string;
  model: LlamaModel;
  context: LlamaContext;
  minConfidence: number;
}

/** A context sequence's predictors: the switch node-llama-cpp calls, and what it switches between. */
interface SequencePredictors {
  switch: SwitchingPredictor;
  lookup: LookupPredictor;
  draft: DraftModelPredictor | undefined;
  /** Prompt lookup's drafts where it has one, else the draft model's (with a draft model only). */
  lookupThenDraft: FirstDraftPredictor | undefined;
}

/**
 * Which native binary runs: a local build of Spark's patched addon (`npm run build:engine`), which
 * generates greedy tokens in a native loop, or node-llama-cpp's prebuilt binary.
 */
export interface EngineBinary {
  build: "local" | "prebuilt";
  /** Greedy generation runs in the addon's native loop (only the patched local build has it). */
  nativeLoop: boolean;
}

/** What {@link LlamaEngine.create} loaded, with its options' defaults applied. */
interface LlamaEngineParts {
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
}

/** Tokens per conversation when none is set: the model's training context, at most 32768. */
export function defaultContextSize(trained: number): number {
  return Math.min(trained > 0 ? trained : 4096, 32768);
}

/** Embedded llama.cpp through node-llama-cpp: the default engine. */
export class LlamaEngine implements Engine {
  readonly info: EngineInfo;
  readonly threads: number;
  /** The draft model's file, when one is loaded. */
  readonly draftModelPath: string | undefined;
  readonly binary: EngineBinary;
  /** Where it computes: backend (cpu, cuda, vulkan, metal) and CPU variant. */
  readonly backend: BackendInfo;
  private readonly pool: SequencePool;
  /** Native greedy runs in progress: each holds the context to itself until stopped. */
  private readonly nativeRuns = new Set<NativeDecodeRun>();
  /** Native runs started so far, and how many of them verified drafts (tests read them). */
  readonly nativeRunCounts = { runs: 0, withDrafts: 0 };
  private generating = 0;
  private readonly predictors = new Map<LlamaContextSequence, SequencePredictors>();
  /** How this model writes function calls. */
  readonly callSyntax: CallSyntax;
  /** Parsed call grammars by their text (the same tools come with every request of a client). */
  private readonly grammars = new Map<string, LlamaGrammar>();
  private readonly warmLoop = new WarmEventLoop();
  private readonly typeAhead: TypeAhead;
  private disposed = false;

  private readonly llama: Llama;
  readonly model: LlamaModel;
  private readonly context: LlamaContext;
  readonly chatWrapper: ChatWrapper;
  private readonly prefillChunk: number;
  private readonly draftTokens: number;
  private readonly draftTokenCost: number | undefined;
  private readonly draftSetup: DraftSetup | undefined;
  private readonly kvStates: KvStateCache | undefined;

  private constructor(parts: LlamaEngineParts) {
    const { id, model, context, chatWrapper, draftTokens, draftSetup, draftChunk, nativeLoop } = parts;
    this.llama = parts.llama;
    this.model = model;
    this.context = context;
    this.chatWrapper = chatWrapper;
    this.prefillChunk = parts.prefillChunk;
    this.draftTokens = draftTokens;
    this.draftTokenCost = parts.draftTokenCost;
    this.draftSetup = draftSetup;
    this.kvStates = parts.kvStates;
    this.info = { id, engine: "llama", contextSize: context.contextSize };
    this.threads = context.currentThreads;
    this.draftModelPath = draftSetup?.path;
    const sequences = Array.from({ length: context.totalSequences }, () => {
      const lookup = new LookupPredictor();
      const drafter = draftSetup
        ? new DraftModelPredictor(draftSetup.context.getSequence(), {
            maxTokens: draftTokens,
            minConfidence: draftSetup.minConfidence,
          })
        : undefined;
      const lookupThenDraft = drafter ? new FirstDraftPredictor([lookup, drafter]) : undefined;
      const predictors = new SwitchingPredictor(
        drafter && lookupThenDraft ? [lookup, drafter, lookupThenDraft] : [lookup],
      );
      const sequence = context.getSequence({ tokenPredictor: predictors });
      this.predictors.set(sequence, { switch: predictors, lookup, draft: drafter, lookupThenDraft });
      return sequence;
    });
    this.pool = new SequencePool(sequences);
    this.typeAhead = new TypeAhead({
      model,
      wrapper: chatWrapper,
      pool: this.pool,
      contextSize: context.contextSize,
      chunk: draftChunk,
    });
    this.binary = {
      build: parts.llama.buildType === "localBuild" ? "local" : "prebuilt",
      nativeLoop: nativeLoop && canGenerateNatively(sequences[0]!),
    };
    this.backend = backendInfoOf(parts.llama);
    this.callSyntax = callSyntaxOf(model, chatWrapper);
  }

  static async create(options: LlamaEngineOptions): Promise<LlamaEngine> {
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
      const context = await model.createContext({ contextSize, sequences, threads, batchSize });
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
      const id = options.id ?? path.basename(options.modelPath).replace(/\.gguf$/i, "");
      return new LlamaEngine({
        llama,
        model,
        context,
        chatWrapper: wrapper,
        prefillChunk: options.prefillChunk ?? 128,
        draftTokens: options.draftTokens ?? 16,
        draftTokenCost: options.draftTokenCost,
        id,
        draftSetup: draft,
        kvStates,
        draftChunk: options.draftChunk ?? 32,
        nativeLoop: options.nativeLoop ?? true,
      });
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
    const started = performance.now();
    const signal = options.signal;
    const rendered = request.prefillOnly
      ? this.renderSharedPrefix(request)
      : renderPrompt(this.model, this.chatWrapper, request.messages, request.tools);
    const contextSize = this.info.contextSize;
    if (rendered.tokens.length >= contextSize) {
      throw new SparkError(
        "context_length_exceeded",
        `The input is ${rendered.tokens.length} tokens; this model's context holds ${contextSize}.`,
        { param: "input" },
      );
    }

    // A native run holds the context until stopped (even erasing waits for it): from here on it goes
    // on in the batched path, beside this request.
    for (const run of this.nativeRuns) run.stop();
    this.generating++;
    let slot: Slot;
    try {
      slot = await this.pool.acquire(rendered.tokens, request.conversation, signal);
    } catch (error) {
      this.generating--;
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
    this.warmLoop.acquire();
    try {
      yield* this.run(slot, request, rendered.tokens, rendered.stopTriggers, options, started);
    } finally {
      this.generating--;
      this.warmLoop.release();
      this.pool.release(slot);
    }
  }

  private async *run(
    slot: Slot,
    request: GenerateRequest,
    renderedTokens: Token[],
    stopTriggers: string[],
    { signal, onPrefillProgress }: GenerateOptions,
    started: number,
  ): AsyncGenerator<EngineEvent> {
    const sequence = slot.sequence;
    const restored = restoreGeneratedTokens(renderedTokens, slot.spans);
    const tokens = restored.tokens;
    slot.spans = restored.applied;
    // Reuse the longest cached prefix; the last prompt token is always evaluated to get logits.
    const prefillOnly = request.prefillOnly === true;
    const prefillEnd = prefillOnly ? tokens.length : tokens.length - 1;
    let reused = sequence.compareContextTokens(tokens).firstDifferentIndex;
    const kvStates =
      this.kvStates && prefillEnd - reused >= this.kvStates.minTokens ? this.kvStates : undefined;
    if (kvStates) {
      await kvStates.restore(sequence, tokens, { after: reused, upTo: prefillEnd });
      reused = sequence.compareContextTokens(tokens).firstDifferentIndex;
    }
    if (!prefillOnly && reused >= tokens.length) reused = tokens.length - 1;
    if (reused < sequence.nextTokenIndex) {
      await sequence.eraseContextTokenRanges([{ start: reused, end: sequence.nextTokenIndex }]);
    }

    const predictors = this.predictors.get(sequence)!;
    const lookup = this.lookupSettings(request);
    // The draft model drafts for requests without a prediction: alone, or where prompt lookup
    // (every request with tools) finds nothing to copy.
    const drafter = lookup.kind === "text" ? undefined : predictors.draft;
    // Where the prefix worth saving ends, when this run evaluates it: the prefill stops there once.
    const saveAt = kvStates && this.prefixToSave(request, tokens, { after: reused, upTo: prefillEnd });
    for (let at = reused; at < prefillEnd; ) {
      if (signal?.aborted) {
        const now = performance.now();
        yield done({
          stopReason: "cancelled",
          inputTokens: tokens.length,
          cachedInputTokens: reused,
          started,
          prefilled: now,
        });
        return;
      }
      const end = Math.min(prefillEnd, at + this.prefillChunk, saveAt && at < saveAt ? saveAt : prefillEnd);
      await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(at, end));
      if (end === saveAt) await kvStates?.save(sequence);
      // The draft model evaluates the prompt too, after the main model (never beside it: on a CPU
      // they would share the cores); it may be further behind, when earlier turns did not use it.
      await drafter?.catchUp(tokens, end, this.prefillChunk, signal);
      onPrefillProgress?.(end - reused, prefillEnd - reused);
      at = end;
    }
    // Also when the main model had the whole prompt cached.
    if (!signal?.aborted) await drafter?.catchUp(tokens, prefillEnd, this.prefillChunk, signal);
    const prefilled = performance.now();
    if (prefillOnly || signal?.aborted) {
      const stopReason = prefillOnly ? "stop" : "cancelled";
      yield done({ stopReason, inputTokens: tokens.length, cachedInputTokens: reused, started, prefilled });
      return;
    }

    const tools = request.tools ?? [];
    const choice = request.toolChoice ?? "auto";
    if (typeof choice === "object" && !tools.some((tool) => tool.name === choice.name)) {
      throw new SparkError(
        "invalid_request",
        `tool_choice names '${choice.name}', which is not among the tools.`,
        {
          param: "tool_choice",
        },
      );
    }
    const syntax = tools.length > 0 ? this.callSyntax : null;
    // Reasoning and message framing are parsed with or without tools; calls only with them.
    const parser = new OutputParser([...stopTriggers, ...(request.stop ?? [])], this.callSyntax, {
      calls: syntax !== null,
      tools,
    });
    const maxOutput = Math.min(
      request.maxOutputTokens ?? Number.POSITIVE_INFINITY,
      this.info.contextSize - tokens.length,
    );
    const generated: Token[] = [];
    let pending: Token[] = [];
    let emittedText = "";
    let reasoned = false;
    const calls: ToolCall[] = [];
    let stopReason: StopReason = "stop";
    let firstTokenAt = 0;
    let lastTokenAt = 0;
    // Where each flush of decoded text ended: tokens so far and output offset (for rewinding to a
    // call's start), and the output text itself.
    const flushes: { tokens: number; text: number }[] = [{ tokens: 0, text: 0 }];
    let output = "";
    // Characters of regenerated text the parser already has (see `rewind`).
    let skip = 0;
    let openCall: { callId: string; name: string } | undefined;

    // Drafts come from the request's prediction, or from prompt lookup and the draft model. Greedy
    // requests decode in the native loop (when the addon has it and nothing else generates), which
    // verifies the drafts itself, unless refuted drafts cannot be dropped from a model's state (it
    // needs checkpoints): node-llama-cpp's batched path drafts with the same predictors.
    if (lookup.kind !== "off") predictors.lookup.configure(lookup, tokens.length);
    const predictor =
      lookup.kind === "off"
        ? drafter
        : lookup.kind === "tokens" && drafter
          ? predictors.lookupThenDraft
          : predictors.lookup;
    predictors.switch.select(predictor);
    const predictionsBefore = { ...sequence.tokenPredictions };
    const nativeDrafted = { drafted: 0, accepted: 0 };
    const native =
      (request.temperature ?? 0) === 0 &&
      (predictor === undefined ||
        (!sequence.needsCheckpoints && !(drafter?.sequence.needsCheckpoints ?? false)));
    // What a native run drafts from, given the output so far.
    const tokenCost = this.draftTokenCost;
    const nativeDrafts = async (): Promise<NativeDrafts | undefined> => {
      if (lookup.kind === "text") {
        const fromStart = generated.length === 0;
        const recent = output.slice(-64);
        return { maxDraft: lookup.maxDraft, tokenCost, prediction: lookup.text, fromStart, recent };
      }
      const history = [...tokens, ...generated];
      const lookupDrafts =
        lookup.kind === "tokens"
          ? {
              maxDraft: lookup.maxDraft,
              tokenCost,
              history: Uint32Array.from(history),
              minPattern: lookup.minPattern,
            }
          : undefined;
      if (!drafter) return lookupDrafts;
      // The draft model's sequence must hold exactly what the main sequence holds.
      await drafter.catchUp(history, sequence.nextTokenIndex, this.prefillChunk);
      return {
        ...lookupDrafts,
        tokenCost,
        maxDraft: drafter.settings.maxTokens,
        draftSequence: drafter.sequence,
        minConfidence: drafter.settings.minConfidence,
      };
    };
    // A forced call is under its grammar from the first token; otherwise the grammar switches on
    // where the model starts a call, and off where the call ends.
    let grammar =
      syntax && choice !== "auto"
        ? this.grammarState(callGrammar(syntax, tools, { choice, withTrigger: true }))
        : undefined;
    let evaluation = this.decode(sequence, tokens[tokens.length - 1]!, request, {
      nativeTokens: native ? maxOutput : 0,
      nativeDrafts,
      nativeDrafted,
      grammar,
    });
    decoding: for (;;) {
      let rewind: { tokens: number; lead: string } | undefined;
      let callsEnded = false;
      const events: EngineEvent[] = [];
      const handle = (pieces: ParsedOutput[]): boolean => {
        let begun = false;
        for (const piece of pieces) {
          switch (piece.type) {
            case "text":
              emittedText += piece.text;
              events.push({ type: "text", text: piece.text });
              break;
            case "reasoning":
              reasoned = true;
              events.push({ type: "reasoning", text: piece.text });
              break;
            case "calls_begin":
              if (grammar) {
                begun = true;
                break;
              }
              // Generate the call again from the last token boundary at or before its trigger's
              // end, under the grammar; the text from that boundary to the trigger's end is
              // already parsed, so the grammar repeats it and the parser skips it.
              for (let i = flushes.length - 1; i >= 0; i--) {
                const flush = flushes[i]!;
                if (flush.text <= piece.at) {
                  rewind = { tokens: flush.tokens, lead: output.slice(flush.text, piece.at) };
                  break;
                }
              }
              parser.truncate(piece.at);
              break;
            case "call_start":
              openCall = { callId: newCallId(), name: piece.name };
              events.push({ type: "tool_call_start", ...openCall });
              break;
            case "call_delta":
              if (openCall)
                events.push({ type: "tool_call_delta", callId: openCall.callId, delta: piece.delta });
              break;
            case "call":
              calls.push({
                callId: openCall?.callId ?? newCallId(),
                name: piece.name,
                arguments: piece.arguments,
              });
              events.push({ type: "tool_call", call: calls.at(-1)! });
              openCall = undefined;
              break;
            case "calls_end":
              callsEnded = grammar !== undefined;
              break;
          }
        }
        return begun;
      };
      for await (const token of evaluation) {
        lastTokenAt = performance.now();
        if (firstTokenAt === 0) firstTokenAt = lastTokenAt;
        if (this.model.isEogToken(token)) break decoding;
        generated.push(token);
        pending.push(token);
        const text = this.model.detokenize(
          pending,
          true,
          generated.slice(-pending.length - 4, -pending.length),
        );
        // A multi-byte character split across tokens decodes to U+FFFD until its last byte arrives.
        if (!(text.endsWith("\uFFFD") && pending.length < 4)) {
          pending = [];
          output += text;
          flushes.push({ tokens: generated.length, text: output.length });
          const fresh = text.slice(Math.min(skip, text.length));
          skip -= text.length - fresh.length;
          // Under a grammar already (a forced call), parsing goes on at once after the trigger.
          let begun = handle(parser.push(fresh));
          while (begun) begun = handle(parser.push(""));
          for (const event of events) yield event;
          events.length = 0;
        }
        if (parser.stopped) break decoding;
        // A forced call is the whole reply (llama-server's rule too): it ends with the call.
        if (callsEnded && choice !== "auto") break decoding;
        if (rewind || callsEnded) break;
        if (signal?.aborted) {
          stopReason = "cancelled";
          break decoding;
        }
        if (generated.length >= maxOutput) {
          stopReason = "length";
          break decoding;
        }
      }
      if (rewind) {
        generated.length = rewind.tokens;
        while (flushes.at(-1)!.tokens > rewind.tokens) flushes.pop();
        output = output.slice(0, flushes.at(-1)!.text);
        pending = [];
        skip = rewind.lead.length;
        const last = generated.at(-1) ?? tokens[tokens.length - 1]!;
        // `last` goes back in at its own position: everything from there on is generated again.
        const position = tokens.length - 1 + generated.length;
        if (position < sequence.nextTokenIndex) {
          await sequence.eraseContextTokenRanges([{ start: position, end: sequence.nextTokenIndex }]);
        }
        grammar = this.grammarState(callGrammar(syntax!, tools, { choice, lead: rewind.lead }));
        predictors.switch.select(undefined);
        evaluation = this.decode(sequence, last, request, { nativeTokens: 0, grammar });
        continue;
      }
      if (callsEnded) {
        grammar = undefined;
        predictors.switch.select(predictor);
        const remaining = maxOutput - generated.length;
        evaluation = this.decode(sequence, generated.at(-1)!, request, {
          nativeTokens: native ? remaining : 0,
          nativeDrafts,
          nativeDrafted,
        });
        continue;
      }
      break;
    }
    const stoppedByTrigger = parser.stopped;
    for (const piece of parser.finish()) {
      if (piece.type === "text") {
        emittedText += piece.text;
        yield { type: "text", text: piece.text };
      } else if (piece.type === "reasoning") {
        reasoned = true;
        yield { type: "reasoning", text: piece.text };
      }
    }
    if (calls.length > 0 && stopReason === "stop") stopReason = "tool_calls";

    // Remember what was generated, so the next prompt that contains this text reuses its KV state
    // (only when every generated token is in the text: no stop trigger or reasoning was cut out of it).
    if (calls.length === 0 && !reasoned && !stoppedByTrigger && emittedText) {
      slot.spans.push({ start: tokens.length, generated, rendered: this.model.tokenize(emittedText, false) });
    } else if (calls.length > 0 && !reasoned) {
      const rendered = this.renderedReply(request, tokens, generated, { content: emittedText, calls });
      if (rendered) slot.spans.push({ start: tokens.length, generated, rendered });
    }
    const after = sequence.tokenPredictions;
    predictors.switch.select(undefined);
    predictors.lookup.configure({ kind: "off" });
    yield done({
      stopReason,
      inputTokens: tokens.length,
      cachedInputTokens: reused,
      outputTokens: generated.length,
      predictions: {
        accepted: after.used - predictionsBefore.used + nativeDrafted.accepted,
        rejected:
          after.refuted -
          predictionsBefore.refuted +
          (after.unused - predictionsBefore.unused) +
          (nativeDrafted.drafted - nativeDrafted.accepted),
      },
      started,
      prefilled,
      firstTokenAt,
      lastTokenAt,
    });
  }

  /**
   * The generated tokens after `lastToken`. Up to `nativeTokens` of them come from the addon's
   * native greedy loop, when it has one and this is the only generation running, with drafts from
   * `nativeDrafts()` verified there (counted into `nativeDrafted`); the rest (all of them otherwise)
   * from node-llama-cpp's batched evaluation, which drafts with the sequence's predictor and samples.
   */
  private async *decode(
    sequence: LlamaContextSequence,
    lastToken: Token,
    request: GenerateRequest,
    {
      nativeTokens,
      nativeDrafts,
      nativeDrafted,
      grammar,
    }: {
      nativeTokens: number;
      nativeDrafts?: () => Promise<NativeDrafts | undefined>;
      nativeDrafted?: { drafted: number; accepted: number };
      grammar?: LlamaGrammarEvaluationState;
    },
  ): AsyncGenerator<Token> {
    let next = lastToken;
    const nativeNow = () => nativeTokens > 0 && !grammar && this.binary.nativeLoop && this.generating === 1;
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
        if (result && nativeDrafted) {
          nativeDrafted.drafted += result.drafted;
          nativeDrafted.accepted += result.accepted;
        }
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

  /** A fresh evaluation state of the grammar `text` (parsed once per text). */
  private grammarState(text: string): LlamaGrammarEvaluationState {
    let grammar = this.grammars.get(text);
    if (!grammar) {
      grammar = new LlamaGrammar(this.llama, { grammar: text });
      if (this.grammars.size >= 32) this.grammars.delete(this.grammars.keys().next().value!);
      this.grammars.set(text, grammar);
    }
    return new LlamaGrammarEvaluationState({ model: this.model, grammar });
  }

  /**
   * The tokens the chat template renders a reply with calls as, in the next prompt, when that is
   * exactly the text the model generated (the call grammar writes arguments in the templates' JSON
   * layout): the reply's KV state is then reused rather than evaluated again.
   */
  private renderedReply(
    request: GenerateRequest,
    prompt: Token[],
    generated: Token[],
    reply: { content: string; calls: ToolCall[] },
  ): Token[] | undefined {
    const answered: ChatMessage[] = [
      ...request.messages,
      { role: "assistant", content: reply.content, toolCalls: reply.calls },
      ...reply.calls.map(
        (call): ChatMessage => ({ role: "tool", callId: call.callId, name: call.name, content: "" }),
      ),
    ];
    const next = renderPrompt(this.model, this.chatWrapper, answered, request.tools).tokens;
    if (next.length < prompt.length || prompt.some((token, i) => token !== next[i])) return undefined;
    const text = this.model.detokenize(generated, true);
    const renderedUpTo = (end: number) => this.model.detokenize(next.slice(prompt.length, end), true);
    // The shortest rendering at least as long as the reply (text grows with the tokens).
    let low = prompt.length + 1;
    let high = next.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (renderedUpTo(middle).length < text.length) low = middle + 1;
      else high = middle;
    }
    return renderedUpTo(low) === text ? next.slice(prompt.length, low) : undefined;
  }

  /**
   * A pre-warm (`prefillOnly`) evaluates what every next turn shares: the conversation up to where a
   * following user message would start, not the open assistant turn the template ends with (the
   * next request would erase that again, and an erase waits for the other streams' batch).
   */
  private renderSharedPrefix(request: GenerateRequest) {
    const { model, chatWrapper } = this;
    const rendered = renderPrompt(model, chatWrapper, request.messages, request.tools);
    const next = renderPrompt(
      model,
      chatWrapper,
      [...request.messages, { role: "user", content: "." }],
      request.tools,
    );
    let shared = 0;
    while (shared < rendered.tokens.length && rendered.tokens[shared] === next.tokens[shared]) shared++;
    return { ...rendered, tokens: rendered.tokens.slice(0, shared) };
  }

  /**
   * The prefix whose KV state is worth saving, when it ends between `after` and `upTo`: a pre-warm's
   * whole prompt, else the leading system messages and tools (what every new conversation of the
   * same client repeats).
   */
  private prefixToSave(
    request: GenerateRequest,
    tokens: Token[],
    { after, upTo }: { after: number; upTo: number },
  ): number | undefined {
    let end = tokens.length;
    if (!request.prefillOnly) {
      const leading = request.messages.findIndex((message) => message.role !== "system");
      if (leading === 0) return undefined;
      const system = leading === -1 ? request.messages : request.messages.slice(0, leading);
      const prefix = this.renderSharedPrefix({ ...request, messages: system }).tokens;
      if (prefix.some((token, i) => token !== tokens[i])) return undefined;
      end = prefix.length;
    }
    return end > after && end <= upTo ? end : undefined;
  }

  /**
   * What to draft from: the request's prediction (long drafts: most of it will match), or with
   * prompt lookup the conversation itself (shorter drafts, longer patterns: matches are rarer).
   */
  private lookupSettings(request: GenerateRequest): LookupSettings {
    const model = this.model;
    if (request.prediction) {
      return {
        kind: "text",
        text: request.prediction,
        maxDraft: this.draftTokens,
        // SentencePiece vocabularies would otherwise start every window with a space token.
        tokenize: (text) => model.tokenize(text, false, "trimLeadingSpace"),
        detokenize: (tokens, lastTokens) => model.detokenize(tokens, true, lastTokens),
      };
    }
    if (request.promptLookup)
      return { kind: "tokens", minPattern: 3, maxDraft: Math.max(1, this.draftTokens >> 1) };
    return { kind: "off" };
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
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

let callCounter = 0;
function newCallId(): string {
  return `call_${Date.now().toString(36)}${(callCounter++).toString(36)}`;
}

interface Finish {
  stopReason: StopReason;
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens?: number;
  predictions?: { accepted: number; rejected: number };
  started: number;
  prefilled: number;
  firstTokenAt?: number;
  lastTokenAt?: number;
}

function done(finish: Finish): EngineEvent {
  const { started, prefilled, firstTokenAt = 0, lastTokenAt = 0 } = finish;
  const result: GenerateResult = {
    stopReason: finish.stopReason,
    usage: {
      inputTokens: finish.inputTokens,
      cachedInputTokens: finish.cachedInputTokens,
      outputTokens: finish.outputTokens ?? 0,
      acceptedPredictionTokens: finish.predictions?.accepted ?? 0,
      rejectedPredictionTokens: finish.predictions?.rejected ?? 0,
    },
    timing: {
      promptMs: prefilled - started,
      firstTokenMs: (firstTokenAt || prefilled) - started,
      decodeMs: firstTokenAt ? lastTokenAt - firstTokenAt : 0,
    },
  };
  return { type: "done", result };
}
