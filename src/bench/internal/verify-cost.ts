import { getLlama, type LlamaContextSequence, LlamaLogLevel, type Token } from "node-llama-cpp";
import { canGenerateNatively, NativeDecodeRun } from "../../engine/llama/internal/native-decode.js";
import { physicalCoreCount } from "../../engine/llama/internal/physical-cores.js";
import { median } from "./stats.js";

export interface PassCosts {
  /** Milliseconds of a pass over k tokens, for each k asked for. */
  passMs: Map<number, number>;
  /** How the passes were timed, in words. */
  timedIn: string;
}

/** Tokens each native run decodes: enough passes that the run's start weighs little. */
const NATIVE_RUN_TOKENS = 96;

/**
 * Milliseconds llama.cpp takes to evaluate `k` tokens in one forward pass with a token picked at
 * each (what verifying a draft of k - 1 costs), for each k in `counts`, after `contextTokens` of
 * context (a pass attends to all of them: the longer the context, the dearer each token of a
 * pass): the cost model that says how long a draft pays off on this machine.
 *
 * Measured the way the engine decodes: with the patched addon, in its native loop, from the time
 * of its plain steps and of its passes with drafts of k - 1 (a pass costs the same whether its
 * draft is kept or not); with the prebuilt binaries, through `controlledEvaluate`, which samples
 * each position in JavaScript as the engine's batched path does.
 */
export async function verifyCost(
  modelPath: string,
  counts: number[],
  runs: number,
  { threads = physicalCoreCount(), contextTokens = 500 }: { threads?: number; contextTokens?: number } = {},
): Promise<PassCosts> {
  const llama = await getLlama({
    gpu: false,
    build: "never",
    logLevel: LlamaLogLevel.error,
    maxThreads: threads,
  });
  try {
    const model = await llama.loadModel({ modelPath });
    const context = await model.createContext({
      contextSize: contextTokens + NATIVE_RUN_TOKENS + Math.max(...counts) + 64,
      sequences: 1,
      threads,
    });
    const sequence = context.getSequence();
    const line = model.tokenize("const total = values.reduce((sum, value) => sum + value, 0);\n", false);
    const prompt = Array.from(
      { length: contextTokens + Math.max(...counts) + 1 },
      (_, i) => line[i % line.length]!,
    );
    await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, contextTokens));
    const native = canGenerateNatively(sequence)
      ? await nativePassCosts(sequence, prompt[contextTokens]!, counts, runs)
      : undefined;
    if (native) return { passMs: native, timedIn: "the native loop (the argmax at each position)" };
    return {
      passMs: await sampledPassCosts(sequence, prompt.slice(contextTokens), counts, runs),
      timedIn: "controlledEvaluate (a token sampled in JavaScript at each position)",
    };
  } finally {
    await llama.dispose();
  }
}

/**
 * The native loop's passes: a plain run gives a step's time; a run drafting up to k - 1 tokens
 * from its own output gives what its draft tokens added, per token, from which a pass over k
 * tokens follows. Undefined where the loop did not draft most of what it could: a random-weight
 * model's logits in a pass differ enough from its single steps' that it refutes every draft, and
 * the loop then stops drafting.
 */
async function nativePassCosts(
  sequence: LlamaContextSequence,
  first: Token,
  counts: number[],
  runs: number,
): Promise<Map<number, number> | undefined> {
  const base = sequence.nextTokenIndex;
  const run = async (drafts?: ConstructorParameters<typeof NativeDecodeRun>[3]) => {
    const native = new NativeDecodeRun(sequence, first, NATIVE_RUN_TOKENS, drafts);
    const tokens: Token[] = [];
    for await (const token of native) tokens.push(token);
    const result = await native.finished;
    await sequence.eraseContextTokenRanges([{ start: base, end: sequence.nextTokenIndex }]);
    return { tokens, ...result };
  };
  // Drafts of the output itself, token for token: prompt lookup over a history that holds it once.
  const output = await run();
  const history = Uint32Array.from([first, ...output.tokens, first]);
  const steps: number[] = [];
  const tokenShares = new Map<number, number[]>(counts.map((k) => [k, []]));
  for (let i = 0; i < runs; i++) {
    const plain = await run();
    const step = plain.ms / plain.passes;
    steps.push(step);
    for (const k of counts) {
      if (k <= 1) continue;
      // A threshold this low drafts k - 1 tokens at every pass while the drafts are accepted.
      const drafted = await run({ maxDraft: k - 1, tokenCost: 0.01, history, minPattern: 1 });
      if (drafted.drafted < (drafted.passes * (k - 1)) / 2) return undefined;
      tokenShares.get(k)!.push((drafted.ms / step - drafted.passes) / drafted.drafted);
    }
  }
  const step = median(steps);
  return new Map(
    counts.map((k) => [k, k <= 1 ? step : step * (1 + Math.max(0, median(tokenShares.get(k)!)) * (k - 1))]),
  );
}

/** `controlledEvaluate` passes over k tokens with a token sampled at each position. */
async function sampledPassCosts(
  sequence: LlamaContextSequence,
  tokens: Token[],
  counts: number[],
  runs: number,
): Promise<Map<number, number>> {
  const base = sequence.nextTokenIndex;
  const times = new Map<number, number[]>(counts.map((k) => [k, []]));
  for (let run = 0; run < runs; run++) {
    for (const k of counts) {
      const started = performance.now();
      await sequence.controlledEvaluate(
        tokens.slice(0, k).map((token) => [token, { generateNext: { token: true } }]),
      );
      times.get(k)!.push(performance.now() - started);
      await sequence.eraseContextTokenRanges([{ start: base, end: sequence.nextTokenIndex }]);
    }
  }
  return new Map([...times].map(([k, ms]) => [k, median(ms)]));
}
