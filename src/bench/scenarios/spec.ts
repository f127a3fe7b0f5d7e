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
  timed: Timed;
  /** Whether it wrote exactly what plain decoding wrote (with greedy sampling it should). */
  same: boolean;
}

interface Measured {
  plainTokensPerSecond: number;
  outputTokens: number;
  levels: LevelResult[];
  /** The same request with prompt lookup on (as every request with tools has it). */
  lookup: { timed: Timed; same: boolean };
}

/**
 * A first, untimed run evaluates the prompt, so every timed run below starts from the same cached
 * state; the timed plain run's output is the model's own greedy answer, and the prediction for
 * each level is that answer, whole or with some of its lines altered.
 */
async function measure(
  engine: Engine,
  messages: ChatMessage[],
  maxOutputTokens: number,
  kept: number[],
  plainRuns: number,
  log: (line: string) => void,
): Promise<Measured> {
  const request: GenerateRequest = { messages, maxOutputTokens, temperature: 0 };
  await timedGenerate(engine, { ...request, maxOutputTokens: 1 });
  const reference = await timedGenerate(engine, request);
  const plain = [reference.tokensPerSecond];
  const levels: LevelResult[] = [];
  for (const share of kept) {
    const prediction = alterSegments(reference.text, 1 - share);
    const timed = await timedGenerate(engine, { ...request, prediction });
    levels.push({ kept: share, timed, same: timed.text === reference.text });
    const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } = timed.result.usage;
    log(
      `spec ${Math.round(share * 100)}% match: ${timed.tokensPerSecond.toFixed(1)} tok/s (plain ${plain[0]!.toFixed(1)}), ${accepted} accepted, ${rejected} rejected`,
    );
  }
  const looked = await timedGenerate(engine, { ...request, promptLookup: true });
  log(`spec prompt lookup: ${looked.tokensPerSecond.toFixed(1)} tok/s (plain ${plain[0]!.toFixed(1)})`);
  while (plain.length < plainRuns) plain.push((await timedGenerate(engine, request)).tokensPerSecond);
  return {
    plainTokensPerSecond: median(plain),
    outputTokens: reference.result.usage.outputTokens,
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

function rows(
  measured: Measured,
  model: string,
  targets: Record<number, { target: string; holds: (ratio: number) => boolean }>,
  note: string,
): BenchRow[] {
  const { timed: looked, same: lookupSame } = measured.lookup;
  const lookupRow = infoRow({
    scenario: "spec",
    metric: `the same edit with prompt lookup (on for every request with tools)${model}: tokens/s vs plain decoding`,
    value: looked.tokensPerSecond,
    baseline: measured.plainTokensPerSecond,
    unit: "tok/s",
    detail: `${looked.result.usage.outputTokens} output tokens, greedy; drafts ${looked.result.usage.acceptedPredictionTokens} accepted, ${looked.result.usage.rejectedPredictionTokens} rejected${lookupSame ? "" : NOT_COMPARABLE}`,
  });
  const levelRows = measured.levels.map(({ kept, timed, same }) => {
    const { acceptedPredictionTokens: accepted, rejectedPredictionTokens: rejected } = timed.result.usage;
    const fields = {
      scenario: "spec",
      metric: `edit with Predicted Outputs, ${Math.round(kept * 100)}% of lines as predicted${model}: tokens/s vs plain decoding`,
      value: timed.tokensPerSecond,
      baseline: measured.plainTokensPerSecond,
      unit: "tok/s",
      detail:
        `${timed.result.usage.outputTokens} output tokens, greedy; prediction tokens ${accepted} accepted, ${rejected} rejected` +
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
 * Predicted Outputs on an edit: the same greedy request with the expected output as `prediction`
 * (all of it right, 90%, 50% and none of its lines right) against plain decoding, and with prompt
 * lookup, on the bench model and, when one is at hand, a small trained model.
 */
export async function specScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const { specFileLines, specOutputTokens } = ctx.sizes;
  const plainRuns = ctx.quick ? 1 : 2;
  const messages: ChatMessage[] = [
    {
      role: "user",
      content: `Rewrite this ${specFileLines}-line file with clearer names. Reply with the whole file only.\n\n${sourceFile(specFileLines)}`,
    },
  ];
  const synthetic = await measure(
    ctx.engine,
    messages,
    specOutputTokens,
    [1, 0.9, 0.5, 0],
    plainRuns,
    ctx.log,
  );
  const result = rows(
    synthetic,
    "",
    {
      0.9: { target: ">= 5x", holds: (ratio) => ratio >= 5 },
      0.5: { target: ">= 1x", holds: (ratio) => ratio >= 1 },
      0: { target: ">= 1x", holds: (ratio) => ratio >= 1 },
    },
    "; random weights often write non-canonical token sequences that a text prediction cannot draft token for token",
  );
  // The cost model behind the draft lengths: on a CPU, verifying k tokens is not free.
  result.push(...(await ceilingRows(ctx, ctx.modelPath, "")));
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
    const measured = await measure(trained, story, tokens, [1, 0.9, 0.5, 0], plainRuns, ctx.log);
    result.push(...(await ceilingRows(ctx, ctx.trainedModelPath, ` (trained ${name})`, 1)));
    result.push(
      ...rows(
        measured,
        ` (trained ${name})`,
        {
          0.9: { target: ">= 5x", holds: (ratio) => ratio >= 5 },
          0: { target: ">= 1x", holds: (ratio) => ratio >= 1 },
        },
        "; a trained model writes canonical tokens, so this is the realistic acceptance; 1 thread",
      ),
    );
  }
  if (ctx.chatModelPath) {
    // A trained chat model rewriting the bench's file: the edit Predicted Outputs is for.
    await using chat = await LlamaEngine.create({ modelPath: ctx.chatModelPath, sequences: 1 });
    const measured = await measure(chat, messages, specOutputTokens, [1, 0.9, 0.5, 0], plainRuns, ctx.log);
    result.push(...(await ceilingRows(ctx, ctx.chatModelPath, ` (trained ${chat.info.id})`, chat.threads)));
    result.push(
      ...rows(
        measured,
        ` (trained ${chat.info.id})`,
        {
          0.9: { target: ">= 3x", holds: (ratio) => ratio >= 3 },
          0: { target: ">= 1x", holds: (ratio) => ratio >= 1 },
        },
        `; a trained chat model, ${chat.threads} threads`,
      ),
    );
  }
  return result;
}

/**
 * What a forward pass over k tokens costs against one decode step on `modelPath`: a draft of k - 1
 * tokens, all accepted, makes a pass yield k tokens, so k over that ratio bounds what speculation
 * can reach on this machine, whatever drafts it.
 */
async function ceilingRows(
  ctx: BenchContext,
  modelPath: string,
  model: string,
  threads?: number,
): Promise<BenchRow[]> {
  const cost = await verifyCost(modelPath, [1, 9, 17], ctx.quick ? 3 : 5, threads);
  return [9, 17].map((k) =>
    infoRow({
      scenario: "spec",
      metric: `one forward pass over ${k} tokens (a draft of ${k - 1} verified) vs one decode step${model}`,
      value: cost.get(k)!,
      baseline: cost.get(1)!,
      unit: "ms",
      detail: `a token sampled at each position, after 500 tokens of context; at best a pass yields ${k} tokens, so ${(k / (cost.get(k)! / cost.get(1)!)).toFixed(1)}x is the ceiling of drafts this long`,
    }),
  );
}
