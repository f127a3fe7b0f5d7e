import type { GenerateRequest, GenerateResult } from "../../engine/engine.js";
import { LlamaEngine } from "../../engine/llama/llama-engine.js";
import type { ChatMessage } from "../../protocol/chat.js";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { alterSegments } from "../internal/alter-segments.js";
import { median } from "../internal/stats.js";
import { verifyCost } from "../internal/verify-cost.js";

type Engine = Pick<LlamaEngine, "generate">;

interface Timed {
  text: string;
  result: GenerateResult;
  /** Output tokens over the wall time from the call to `done`. */
  tokensPerSecond: number;
}

async function timedGenerate(engine: Engine, request: GenerateRequest): Promise<Timed> {
  const started = performance.now();
  let text = "";
  let result: GenerateResult | undefined;
  for await (const event of engine.generate(request)) {
    if (event.type === "text") text += event.text;
    else if (event.type === "done") result = event.result;
  }
  if (!result) throw new Error("bench: the engine ended without a result");
  return {
    text,
    result,
    tokensPerSecond: (result.usage.outputTokens * 1000) / (performance.now() - started),
  };
}

interface LevelResult {
  /** Share of the prediction's lines left as the model writes them, e.g. 0.9. */
  kept: number;
  /** The median of its runs' tokens per second. */
  tokensPerSecond: number;
  /** Its last run (the counts of drafts in the row's detail). */
  timed: Timed;
  /** Whether every run wrote exactly what plain decoding wrote (with greedy sampling it should). */
  same: boolean;
}

interface Measured {
  plainTokensPerSecond: number;
  /** The edit's prompt, in tokens. */
  inputTokens: number;
  outputTokens: number;
  /** Rounds of plain and predicted runs, alternated; the rates are their medians. */
  rounds: number;
  levels: LevelResult[];
  /** The same request with prompt lookup on (as every request with tools has it). */
  lookup: { timed: Timed; same: boolean };
}

/** How many rounds of runs: at least `minRounds`, more while they take under `budgetMs`. */
export interface RoundBudget {
  minRounds: number;
  maxRounds: number;
  budgetMs: number;
}

/**
 * A first, untimed run evaluates the prompt, so every timed run below starts from the same cached
 * state; the reference run's output is the model's own greedy answer, and the prediction for each
 * level is that answer, whole or with some of its lines altered. Then rounds of a plain run and one
 * run per level, in alternating order (a machine loaded by other work slows every kind alike), as
 * many as the budget allows (a tiny model's runs take milliseconds, and one run says little);
 * each rate is the median of its runs.
 */
async function measure(
  engine: Engine,
  messages: ChatMessage[],
  maxOutputTokens: number,
  kept: number[],
  budget: RoundBudget,
  log: (line: string) => void,
): Promise<Measured> {
  const request: GenerateRequest = { messages, maxOutputTokens, temperature: 0 };
  await timedGenerate(engine, { ...request, maxOutputTokens: 1 });
  const reference = await timedGenerate(engine, request);
  const predictions = kept.map((share) => alterSegments(reference.text, 1 - share));
  const plain: number[] = [];
  const rates = kept.map((): number[] => []);
  const last: Timed[] = [];
  const same = kept.map(() => true);
  const started = performance.now();
  let rounds = 0;
  while (
    rounds < budget.minRounds ||
    (rounds < budget.maxRounds && performance.now() - started < budget.budgetMs)
  ) {
    const runs = [-1, ...kept.keys()];
    if (rounds % 2 === 1) runs.reverse();
    for (const level of runs) {
      if (level < 0) {
        plain.push((await timedGenerate(engine, request)).tokensPerSecond);
        continue;
      }
      const timed = await timedGenerate(engine, { ...request, prediction: predictions[level]! });
      rates[level]!.push(timed.tokensPerSecond);
      last[level] = timed;
      if (timed.text !== reference.text) same[level] = false;
    }
    rounds++;
  }
  const plainTokensPerSecond = median(plain);
  const levels = kept.map((share, level): LevelResult => {
    const timed = last[level]!;
    const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } = timed.result.usage;
    const tokensPerSecond = median(rates[level]!);
    log(
      `spec ${Math.round(share * 100)}% match: ${tokensPerSecond.toFixed(1)} tok/s (plain ${plainTokensPerSecond.toFixed(1)}, medians of ${rounds}), ${accepted} accepted, ${rejected} rejected`,
    );
    return { kept: share, tokensPerSecond, timed, same: same[level]! };
  });
  const looked = await timedGenerate(engine, { ...request, promptLookup: true });
  log(
    `spec prompt lookup: ${looked.tokensPerSecond.toFixed(1)} tok/s (plain ${plainTokensPerSecond.toFixed(1)})`,
  );
  return {
    plainTokensPerSecond,
    inputTokens: reference.result.usage.inputTokens,
    outputTokens: reference.result.usage.outputTokens,
    rounds,
    levels,
    lookup: { timed: looked, same: looked.text === reference.text },
  };
}

/** A file of short code lines: 300 of them fit the bench model's 4,096-token context with the reply. */
function sourceFile(lines: number): string {
  return Array.from({ length: lines }, (_, i) =>
    i % 3 === 0 ? `const v${i} = load(${i});` : `total += v${i - (i % 3)} * ${i};`,
  ).join("\n");
}

const NOT_COMPARABLE =
  "; not comparable: it wrote other text than plain decoding (llama.cpp on this CPU computes a token's logits alone differently from in a batch, by up to 0.2 at some KV lengths, and a random model's near-ties then flip)";

type Targets = Record<number, { target: string; holds: (ratio: number) => boolean }>;

function rows(measured: Measured, model: string, targets: Targets, note: string): BenchRow[] {
  const { timed: looked, same: lookupSame } = measured.lookup;
  const lookupRow = infoRow({
    scenario: "spec",
    metric: `the same edit with prompt lookup (on for every request with tools)${model}: tokens/s vs plain decoding`,
    value: looked.tokensPerSecond,
    baseline: measured.plainTokensPerSecond,
    unit: "tok/s",
    detail: `${looked.result.usage.outputTokens} output tokens, greedy, 1 run; drafts ${looked.result.usage.acceptedPredictionTokens} accepted, ${looked.result.usage.rejectedPredictionTokens} rejected${lookupSame ? "" : NOT_COMPARABLE}`,
  });
  const levelRows = measured.levels.map(({ kept, tokensPerSecond, timed, same }) => {
    const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } = timed.result.usage;
    const fields = {
      scenario: "spec",
      metric: `edit with Predicted Outputs, ${Math.round(kept * 100)}% of lines as predicted${model}: tokens/s vs plain decoding`,
      value: tokensPerSecond,
      baseline: measured.plainTokensPerSecond,
      unit: "tok/s",
      detail:
        `${timed.result.usage.outputTokens} output tokens, greedy, medians of ${measured.rounds} alternated rounds; last run's prediction tokens ${accepted} accepted, ${rejected} rejected` +
        `${same ? "" : NOT_COMPARABLE}${note}`,
    };
    const claim = targets[kept];
    if (!claim) return infoRow(fields);
    return same
      ? row({ ...fields, target: claim.target }, claim.holds)
      : infoRow({ ...fields, target: claim.target });
  });
  return [...levelRows, lookupRow];
}

/**
 * What this machine allows speculation on a model: what a forward pass over 9 and 17 tokens costs
 * in decode steps, and the best of 9 and 17 over it (a pass that yields k tokens at best).
 */
export interface SpecCeiling {
  /** Milliseconds of a pass over 1, 9 and 17 tokens. */
  passMs: Map<number, number>;
  /** Decode steps a pass over 17 tokens costs. */
  steps17: number;
  /** The most a fully accepted draft of 8 or 16 tokens can speed decoding up. */
  ceiling: number;
  /** Memory-bound: a pass over 17 tokens costs at most 2 steps (a GPU, or a model larger than the caches). */
  memoryBound: boolean;
  /** How the passes were timed, in words, and after how many tokens of context. */
  timedIn?: string;
  contextTokens?: number;
}

/** A pass over 17 tokens at most this many steps: the ≥3x target holds its ground. */
const MEMORY_BOUND_STEPS = 2;
/** Compute-bound, the 90% row's target is this share of the ceiling. */
const CEILING_SHARE = 0.8;

export function specCeiling(passMs: Map<number, number>): SpecCeiling {
  const step = passMs.get(1)!;
  const steps = (k: number) => passMs.get(k)! / step;
  // A pass over more tokens never costs less: a lower reading is a step slowed by other work.
  const steps17 = Math.max(steps(17), steps(9));
  return {
    passMs,
    steps17,
    ceiling: Math.max(9 / steps(9), 17 / steps17),
    memoryBound: steps17 <= MEMORY_BOUND_STEPS,
  };
}

/** Which case the machine is in for the model, in words. */
export function ceilingCase(ceiling: SpecCeiling): string {
  const kind = ceiling.memoryBound ? "memory-bound" : "compute-bound";
  return `${kind}: a 17-token pass costs ${ceiling.steps17.toFixed(1)} steps, ceiling ${ceiling.ceiling.toFixed(1)}x`;
}

/**
 * The 90% row's target: ≥3x where passes are cheap (memory-bound), else 0.8 of the ceiling this
 * machine measured for the model (on a 2-core CPU a 135M model is compute-bound: a 17-token pass
 * costs 6-12 steps, so no draft can reach 3x there).
 */
export function ninetyPercentTarget(ceiling: SpecCeiling): {
  target: string;
  holds: (ratio: number) => boolean;
} {
  if (ceiling.memoryBound) return { target: `>= 3x (${ceilingCase(ceiling)})`, holds: (ratio) => ratio >= 3 };
  const least = CEILING_SHARE * ceiling.ceiling;
  return {
    target: `>= ${least.toFixed(2)}x (${CEILING_SHARE} of the ceiling; ${ceilingCase(ceiling)})`,
    holds: (ratio) => ratio >= least,
  };
}

const NEVER_SLOWER = { target: ">= 1x", holds: (ratio: number) => ratio >= 1 };

/**
 * Predicted Outputs on an edit: the same greedy request with the expected output as `prediction`
 * (all of it right, 90%, 50% and none of its lines right) against plain decoding, and with prompt
 * lookup, on the bench model and, when one is at hand, a small trained model. Each model's 90% row
 * is held to a share of the ceiling its pass costs allow on this machine.
 */
export async function specScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const { specFileLines, specOutputTokens } = ctx.sizes;
  // About 5 s of rounds a model with --quick (200 output tokens), 15 s without (600).
  const budget: RoundBudget = {
    minRounds: ctx.quick ? 1 : 3,
    maxRounds: ctx.quick ? 15 : 31,
    budgetMs: specOutputTokens * 25,
  };
  const messages: ChatMessage[] = [
    {
      role: "user",
      content: `Rewrite this ${specFileLines}-line file with clearer names. Reply with the whole file only.\n\n${sourceFile(specFileLines)}`,
    },
  ];
  const synthetic = await measure(ctx.engine, messages, specOutputTokens, [1, 0.9, 0.5, 0], budget, ctx.log);
  // The cost model behind the draft lengths: on a CPU, verifying k tokens is not free.
  const syntheticCeiling = await measureCeiling(ctx, ctx.modelPath, synthetic);
  const result = rows(
    synthetic,
    "",
    { 0.9: ninetyPercentTarget(syntheticCeiling), 0.5: NEVER_SLOWER, 0: NEVER_SLOWER },
    "; random weights often write non-canonical token sequences that a text prediction cannot draft token for token",
  );
  result.push(...ceilingRows(syntheticCeiling, ""));
  if (ctx.trainedModelPath) {
    // One thread: a 260K-parameter model's operations are too small to split, two threads spend
    // their time at barriers, and on a busy machine one descheduled thread stalls the other.
    await using trained = await LlamaEngine.create({
      modelPath: ctx.trainedModelPath,
      sequences: 1,
      threads: 1,
    });
    const name = trained.info.id;
    // A base model without a chat template: a short plain prompt it continues as a story.
    const story: ChatMessage[] = [{ role: "user", content: "Once upon a time, there was a little girl" }];
    const tokens = Math.min(specOutputTokens, Math.floor(trained.info.contextSize / 2));
    const measured = await measure(trained, story, tokens, [1, 0.9, 0.5, 0], budget, ctx.log);
    const ceiling = await measureCeiling(ctx, ctx.trainedModelPath, measured, 1);
    result.push(...ceilingRows(ceiling, ` (trained ${name})`));
    result.push(
      ...rows(
        measured,
        ` (trained ${name})`,
        { 0.9: ninetyPercentTarget(ceiling), 0: NEVER_SLOWER },
        "; a trained model writes canonical tokens, so this is the realistic acceptance; 1 thread",
      ),
    );
  }
  if (ctx.chatModelPath) {
    // A trained chat model rewriting the bench's file: the edit Predicted Outputs is for.
    await using chat = await LlamaEngine.create({ modelPath: ctx.chatModelPath, sequences: 1 });
    const measured = await measure(chat, messages, specOutputTokens, [1, 0.9, 0.5, 0], budget, ctx.log);
    const ceiling = await measureCeiling(ctx, ctx.chatModelPath, measured, chat.threads);
    result.push(...ceilingRows(ceiling, ` (trained ${chat.info.id})`));
    result.push(
      ...rows(
        measured,
        ` (trained ${chat.info.id})`,
        { 0.9: ninetyPercentTarget(ceiling), 0: NEVER_SLOWER },
        `; a trained chat model, ${chat.threads} threads`,
      ),
    );
  }
  return result;
}

/**
 * The ceiling of the edit `measured` ran: its passes timed after as much context as they had on
 * average (the prompt and half the reply), since each token of a pass attends to all of it.
 */
async function measureCeiling(
  ctx: BenchContext,
  modelPath: string,
  measured: Measured,
  threads?: number,
): Promise<SpecCeiling> {
  const contextTokens = measured.inputTokens + Math.round(measured.outputTokens / 2);
  const { passMs, timedIn } = await verifyCost(modelPath, [1, 9, 17], ctx.quick ? 3 : 5, {
    threads,
    contextTokens,
  });
  return { ...specCeiling(passMs), timedIn, contextTokens };
}

/**
 * What a forward pass over k tokens costs against one decode step: a draft of k - 1 tokens, all
 * accepted, makes a pass yield k tokens, so k over that ratio bounds what speculation can reach on
 * this machine, whatever drafts it.
 */
function ceilingRows(ceiling: SpecCeiling, model: string): BenchRow[] {
  const { passMs } = ceiling;
  return [9, 17].map((k) =>
    infoRow({
      scenario: "spec",
      metric: `one forward pass over ${k} tokens (a draft of ${k - 1} verified) vs one decode step${model}`,
      value: passMs.get(k)!,
      baseline: passMs.get(1)!,
      unit: "ms",
      detail: `after ${ceiling.contextTokens} tokens of context (the edit's prompt and half its reply), timed in ${ceiling.timedIn}; at best a pass yields ${k} tokens, so ${(k / (passMs.get(k)! / passMs.get(1)!)).toFixed(1)}x is the ceiling of drafts this long; ${ceilingCase(ceiling)}`,
    }),
  );
}
