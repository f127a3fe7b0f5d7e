import type { GenerateResult } from "../../engine/engine.js";
import type { RoutingPolicy } from "../../engine/upstream/replica-pool.js";
import { UpstreamEngine } from "../../engine/upstream/upstream-engine.js";
import { type BenchRow, row } from "../bench-report.js";
import { PeerServer } from "../internal/peer-server.js";
import { median } from "../internal/stats.js";

export interface RoutingOptions {
  /** The `llama-server` binary the two replicas run. */
  llamaServer: string;
  /** The GGUF both replicas serve. */
  modelPath: string;
  /** New conversations per policy, one after another. */
  conversations: number;
  /** Sentences of the shared system prompt (about 12 tokens each). */
  systemSentences: number;
  log: (line: string) => void;
}

const CONTEXT = 4096;
const OUTPUT_TOKENS = 4;

/**
 * Spark's replica pool over two real llama-server replicas (one slot, one thread each): N new
 * conversations, one after another, share a long system prompt and differ in their question. With
 * `prefix` routing each goes where the prompt was sent before; with `least-loaded` they alternate
 * (both replicas idle), and each replica evaluates the prompt once. Each policy has a system prompt
 * of its own, so neither finds the other's cached. Reported: the prompt tokens the replicas
 * evaluated (input less cached, from their usage) and the median time to first token, prefix-aware
 * against least-loaded in the same run.
 */
export async function routingScenario(options: RoutingOptions): Promise<BenchRow[]> {
  const replicas = await Promise.all(
    [0, 1].map(() =>
      PeerServer.start({
        binary: options.llamaServer,
        modelPath: options.modelPath,
        contextSize: CONTEXT,
        threads: 1,
        extraArgs: ["--jinja"],
      }),
    ),
  );
  try {
    const measured: Record<RoutingPolicy, { evaluated: number; ttft: number[] }> = {
      "least-loaded": { evaluated: 0, ttft: [] },
      prefix: { evaluated: 0, ttft: [] },
    };
    for (const policy of ["least-loaded", "prefix"] as const) {
      await using engine = new UpstreamEngine({
        replicas: replicas.map((replica) => replica.baseUrl),
        model: "bench",
        routing: policy,
        healthIntervalMs: 0,
        contextSize: CONTEXT,
      });
      const system = Array.from(
        { length: options.systemSentences },
        (_, i) => `${policy} rule ${i + 1}: answer about the project in short, exact sentences.`,
      ).join(" ");
      for (let i = 0; i < options.conversations; i++) {
        const result = await generate(engine, {
          messages: [
            { role: "system", content: system },
            { role: "user", content: `Question ${i + 1}: what does module ${i + 1} do?` },
          ],
          conversation: `${policy}-${i}`,
          maxOutputTokens: OUTPUT_TOKENS,
        });
        measured[policy].evaluated += result.usage.inputTokens - result.usage.cachedInputTokens;
        measured[policy].ttft.push(result.timing.firstTokenMs);
      }
      options.log(
        `routing ${policy}: ${measured[policy].evaluated} prompt tokens evaluated, TTFT ${measured[policy].ttft.map((t) => t.toFixed(0)).join(" ")} ms`,
      );
    }
    const detail = `${options.conversations} new conversations sharing a ${options.systemSentences}-sentence system prompt, two llama-server replicas`;
    const prefix = measured.prefix;
    const leastLoaded = measured["least-loaded"];
    return [
      row(
        {
          scenario: "routing",
          metric: "prompt tokens evaluated (prefix-aware vs least-loaded)",
          value: prefix.evaluated,
          baseline: leastLoaded.evaluated,
          unit: "tok",
          target: "< 1x",
          detail,
        },
        (ratio) => ratio < 1,
      ),
      row(
        {
          scenario: "routing",
          metric: "median TTFT (prefix-aware vs least-loaded)",
          value: median(prefix.ttft),
          baseline: median(leastLoaded.ttft),
          unit: "ms",
          target: "< 1x",
          detail,
        },
        (ratio) => ratio < 1,
      ),
    ];
  } finally {
    for (const replica of replicas) await replica[Symbol.asyncDispose]();
  }
}

async function generate(
  engine: UpstreamEngine,
  request: Parameters<UpstreamEngine["generate"]>[0],
): Promise<GenerateResult> {
  for await (const event of engine.generate(request)) {
    if (event.type === "done") return event.result;
  }
  throw new Error("routing: the upstream engine ended without a result");
}
