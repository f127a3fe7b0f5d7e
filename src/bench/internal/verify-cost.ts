import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { physicalCoreCount } from "../../engine/llama/internal/physical-cores.js";
import { median } from "./stats.js";

/**
 * Milliseconds llama.cpp takes to evaluate `k` tokens in one forward pass with a sampled token at
 * each (what verifying a draft of k - 1 costs), for each k in `counts`, after a 500-token context:
 * the cost model that says how long a draft pays off on this machine.
 */
export async function verifyCost(
  modelPath: string,
  counts: number[],
  runs: number,
  threads = physicalCoreCount(),
): Promise<Map<number, number>> {
  const llama = await getLlama({
    gpu: false,
    build: "never",
    logLevel: LlamaLogLevel.error,
    maxThreads: threads,
  });
  try {
    const model = await llama.loadModel({ modelPath });
    const context = await model.createContext({ contextSize: 2048, sequences: 1, threads });
    const sequence = context.getSequence();
    const prompt = model.tokenize(
      "const total = values.reduce((sum, value) => sum + value, 0);\n".repeat(40),
      false,
    );
    await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, 500));
    const base = sequence.nextTokenIndex;
    const times = new Map<number, number[]>(counts.map((k) => [k, []]));
    for (let run = 0; run < runs; run++) {
      for (const k of counts) {
        const tokens = prompt.slice(500, 500 + k) as Token[];
        const started = performance.now();
        await sequence.controlledEvaluate(tokens.map((token) => [token, { generateNext: { token: true } }]));
        times.get(k)!.push(performance.now() - started);
        await sequence.eraseContextTokenRanges([{ start: base, end: sequence.nextTokenIndex }]);
      }
    }
    return new Map([...times].map(([k, ms]) => [k, median(ms)]));
  } finally {
    await llama.dispose();
  }
}
