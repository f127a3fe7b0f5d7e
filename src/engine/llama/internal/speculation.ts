import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { GenerateRequest } from "../../engine.js";
import { nativeDraftSettings } from "./draft-length.js";
import { DraftModelPredictor } from "./draft-model-predictor.js";
import type { DraftSetup } from "./engine-loading.js";
import { FirstDraftPredictor } from "./first-draft-predictor.js";
import { LookupPredictor, type LookupSettings } from "./lookup-predictor.js";
import type { NativeDecodeResult, NativeDrafts } from "./native-decode.js";
import { PassCostMeter } from "./pass-cost-meter.js";
import { SwitchingPredictor } from "./switching-predictor.js";

/** A context sequence's predictors: the switch node-llama-cpp calls, and what it switches between. */
export interface SequencePredictors {
  switch: SwitchingPredictor;
  lookup: LookupPredictor;
  draft: DraftModelPredictor | undefined;
  /** Prompt lookup's drafts where it has one, else the draft model's (with a draft model only). */
  lookupThenDraft: FirstDraftPredictor | undefined;
}

/** The predictors of one context sequence (a draft model drafts on its own sequence of `draftSetup`'s). */
export function createSequencePredictors(
  draftSetup: DraftSetup | undefined,
  draftTokens: number,
): SequencePredictors {
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
  return { switch: predictors, lookup, draft: drafter, lookupThenDraft };
}

export interface SpeculationSettings {
  /** Most draft tokens per forward pass (half that for prompt lookup). */
  draftTokens: number;
  /** What verifying a draft token costs in the native loop; measured when undefined. */
  draftTokenCost: number | undefined;
  /** Tokens the draft model evaluates between cancellation checks when catching up. */
  chunk: number;
}

/**
 * One request's speculation: what it drafts from (the request's prediction, or prompt lookup and the
 * draft model), whether its tokens may come from the native loop, and how many drafts were kept.
 */
export class Speculation {
  readonly lookup: LookupSettings;
  /**
   * The draft model, when it drafts for this request: for requests without a prediction, alone or
   * where prompt lookup (every request with tools) finds nothing to copy.
   */
  readonly drafter: DraftModelPredictor | undefined;
  /** The predictor node-llama-cpp's batched path drafts with. */
  private readonly predictor: LookupPredictor | DraftModelPredictor | FirstDraftPredictor | undefined;
  /** Drafts the native loop verified, and how many of them it kept. */
  private readonly nativeDrafted = { drafted: 0, accepted: 0 };
  private before: LlamaContextSequence["tokenPredictions"] = { used: 0, unused: 0, validated: 0, refuted: 0 };
  /**
   * Set by {@link start}: greedy requests decode in the native loop (when the addon has it and
   * nothing else generates), which verifies drafts from a prediction or prompt lookup itself, unless
   * refuted drafts cannot be dropped from the model's state (it needs checkpoints) or a draft model
   * drafts (the native loop has no draft model): node-llama-cpp's batched path drafts with the same
   * predictors.
   */
  native = false;

  constructor(
    private readonly predictors: SequencePredictors,
    private readonly sequence: LlamaContextSequence,
    private readonly model: LlamaModel,
    private readonly request: GenerateRequest,
    private readonly settings: SpeculationSettings,
  ) {
    this.lookup = lookupSettings(model, request, settings.draftTokens);
    const lookup = this.lookup;
    this.drafter = lookup.kind === "text" ? undefined : predictors.draft;
    this.predictor =
      lookup.kind === "off"
        ? this.drafter
        : lookup.kind === "tokens" && this.drafter
          ? predictors.lookupThenDraft
          : predictors.lookup;
  }

  /** Starts drafting, for a prompt of `promptLength` tokens. */
  start(promptLength: number): void {
    const { lookup, predictors, sequence, drafter } = this;
    if (lookup.kind !== "off") predictors.lookup.configure(lookup, promptLength);
    predictors.switch.select(this.predictor);
    this.before = { ...sequence.tokenPredictions };
    this.native =
      (this.request.temperature ?? 0) === 0 &&
      (this.predictor === undefined || (drafter === undefined && !sequence.needsCheckpoints));
  }

  /** No drafts (under a call's grammar), until {@link resume}. */
  pause(): void {
    this.predictors.switch.select(undefined);
  }

  resume(): void {
    this.predictors.switch.select(this.predictor);
  }

  /** Counts a native run's verified drafts, and times its passes (a prediction's runs). */
  countNative(result: NativeDecodeResult): void {
    this.nativeDrafted.drafted += result.drafted;
    this.nativeDrafted.accepted += result.accepted;
    if (this.lookup.kind !== "tokens") meterOf(this.model).record(result);
  }

  /** What a native run drafts from, given the prompt and the output so far (never a draft model). */
  async nativeDrafts(prompt: Token[], generated: Token[], output: string): Promise<NativeDrafts | undefined> {
    const { lookup } = this;
    const tokenCost = this.settings.draftTokenCost;
    if (lookup.kind === "text") {
      const fromStart = generated.length === 0;
      const recent = output.slice(-64);
      const sized = predictionDraftSettings(meterOf(this.model), tokenCost, lookup.maxDraft);
      if (sized.maxDraft === 0) return undefined;
      return { ...sized, prediction: lookup.text, fromStart, recent };
    }
    if (lookup.kind === "off") return undefined;
    return {
      maxDraft: lookup.maxDraft,
      tokenCost,
      history: Uint32Array.from([...prompt, ...generated]),
      minPattern: lookup.minPattern,
    };
  }

  /** Stops drafting; the draft tokens kept and dropped since {@link start}. */
  finish(): { accepted: number; rejected: number } {
    const after = this.sequence.tokenPredictions;
    const { before, nativeDrafted } = this;
    this.predictors.switch.select(undefined);
    this.predictors.lookup.configure({ kind: "off" });
    return {
      accepted: after.used - before.used + nativeDrafted.accepted,
      rejected:
        after.refuted -
        before.refuted +
        (after.unused - before.unused) +
        (nativeDrafted.drafted - nativeDrafted.accepted),
    };
  }
}

/** Each model's measured pass cost, shared by its sequences. */
const meters = new WeakMap<LlamaModel, PassCostMeter>();

function meterOf(model: LlamaModel): PassCostMeter {
  let meter = meters.get(model);
  if (!meter) {
    meter = new PassCostMeter();
    meters.set(model, meter);
  }
  return meter;
}

/** Of the runs whose measured cost says drafting does not pay, one in this many drafts anyway. */
const PROBE_EVERY = 8;
const probes = new WeakMap<PassCostMeter, number>();

/**
 * How a prediction's native run drafts: from the cost given, or else measured end to end by
 * `meter`, the length that yields most (draft-length.ts); with neither yet, the native loop's own
 * measure of `llama_decode`. Where the measured cost says no draft pays, every
 * {@link PROBE_EVERY}th run still drafts on the loop's measure, so that one slow measurement
 * (a pass that waited for other work) does not end drafting for good.
 */
export function predictionDraftSettings(
  meter: PassCostMeter,
  givenCost: number | undefined,
  maxDraft: number,
): { maxDraft: number; tokenCost?: number } {
  if (givenCost !== undefined) return nativeDraftSettings(givenCost, maxDraft);
  const measured = meter.tokenCost;
  if (measured === undefined) return { maxDraft };
  const sized = nativeDraftSettings(measured, maxDraft);
  if (sized.maxDraft > 0) return sized;
  const skipped = (probes.get(meter) ?? 0) + 1;
  probes.set(meter, skipped % PROBE_EVERY);
  return skipped % PROBE_EVERY === 0 ? { maxDraft } : sized;
}

/**
 * What to draft from: the request's prediction (long drafts: most of it will match), or with
 * prompt lookup the conversation itself (shorter drafts, longer patterns: matches are rarer).
 */
function lookupSettings(model: LlamaModel, request: GenerateRequest, draftTokens: number): LookupSettings {
  if (request.prediction) {
    return {
      kind: "text",
      text: request.prediction,
      maxDraft: draftTokens,
      // SentencePiece vocabularies would otherwise start every window with a space token.
      tokenize: (text) => model.tokenize(text, false, "trimLeadingSpace"),
      detokenize: (tokens, lastTokens) => model.detokenize(tokens, true, lastTokens),
    };
  }
  if (request.promptLookup) return { kind: "tokens", minPattern: 3, maxDraft: Math.max(1, draftTokens >> 1) };
  return { kind: "off" };
}
