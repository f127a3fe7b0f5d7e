import { randomUUID } from "node:crypto";
import { type BenchRow, row } from "../bench-report.js";
import { streamChat } from "../internal/chat-stream.js";
import { PeerServer } from "../internal/peer-server.js";
import { ServerProcess } from "../internal/server-process.js";
import { median } from "../internal/stats.js";

export interface PrefillModel {
  label: string;
  path: string;
  contextSize: number;
}

export interface PrefillOptions {
  /** The `llama-server` binary to compare with. */
  peerBin: string;
  models: PrefillModel[];
  threads: number;
  /** Prompt tokens evaluated per request, at most the context less a margin for the template. */
  promptTokens: number;
  runs: number;
  log: (line: string) => void;
}

/**
 * Cold prompt evaluation: one ~2,000-token prompt, never seen before, answered with one token, on
 * Spark and on llama-server (same GGUF, threads and context, one slot each). Every request's prompt
 * starts with a fresh nonce so neither side reuses a cached prefix (llama-server is also told
 * `cache_prompt: false`, Spark runs without saved KV states); requests alternate A B, B A.
 */
export async function prefillScenario(options: PrefillOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const model of options.models) {
    const threads = String(options.threads);
    await using spark = await ServerProcess.start(
      [
        ...["--model", model.path, "--ctx-size", String(model.contextSize)],
        ...["--parallel", "1", "--threads", threads],
      ],
      { SPARK_KV_CACHE_BYTES: "0" },
    );
    await using peer = await PeerServer.start({
      binary: options.peerBin,
      modelPath: model.path,
      contextSize: model.contextSize,
      threads: options.threads,
    });
    const wanted = Math.min(options.promptTokens, model.contextSize - 64);
    const text = await promptOfTokens(peer.baseUrl, wanted);
    const sides = [
      { name: "spark" as const, baseUrl: spark.baseUrl, extra: {} },
      { name: "llama-server" as const, baseUrl: peer.baseUrl, extra: { cache_prompt: false } },
    ];
    const ms = { spark: [] as number[], "llama-server": [] as number[] };
    let promptTokens = 0;
    let reused = 0;
    // Warm-up: the first request of each allocates its buffers; not measured.
    for (const side of sides) await evaluate(side.baseUrl, `${randomUUID()} ${text}`, side.extra);
    for (let i = 0; i < options.runs; i++) {
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        const measured = await evaluate(side.baseUrl, `${randomUUID()} ${text}`, side.extra);
        // The chat template's text before the nonce (a default system prompt) may be reused; the
        // prompt after it may not.
        if (measured.cachedTokens > measured.promptTokens / 10) {
          throw new Error(`bench: ${side.name} reused ${measured.cachedTokens} cached prompt tokens`);
        }
        reused = Math.max(reused, measured.cachedTokens);
        ms[side.name].push(measured.ms);
        promptTokens = measured.promptTokens;
      }
      options.log(
        `prefill ${model.label} run ${i + 1}/${options.runs}: ${ms.spark.at(-1)!.toFixed(0)} vs ${ms["llama-server"].at(-1)!.toFixed(0)} ms (${promptTokens} tokens)`,
      );
    }
    rows.push(
      row(
        {
          scenario: "prefill",
          metric: `cold prompt evaluation of ${promptTokens} tokens, ${model.label}: Spark vs llama-server, same GGUF, threads and context`,
          value: median(ms.spark),
          baseline: median(ms["llama-server"]),
          unit: "ms",
          target: "<= 1.0x",
          detail: `request to one-token answer (streamed Chat Completions), no prompt cache on either side (at most ${reused} template tokens reused), ctx ${model.contextSize}, ${options.threads} threads, median of ${options.runs}`,
        },
        (ratio) => ratio <= 1,
      ),
    );
  }
  return rows;
}

async function evaluate(
  baseUrl: string,
  content: string,
  extra: Record<string, unknown>,
): Promise<{ ms: number; promptTokens: number; cachedTokens: number }> {
  const streamed = await streamChat(baseUrl, {
    messages: [{ role: "user", content }],
    max_tokens: 1,
    temperature: 0,
    ...extra,
  });
  return {
    ms: performance.now() - streamed.sentAt,
    promptTokens: streamed.promptTokens,
    cachedTokens: streamed.cachedTokens,
  };
}

/**
 * Text that, after a nonce, is about `tokens` tokens in the model's own tokenizer (llama-server's
 * `/tokenize`).
 */
async function promptOfTokens(peerBaseUrl: string, tokens: number): Promise<string> {
  const count = (text: string) => tokenCount(peerBaseUrl, `${randomUUID()} ${text}`);
  const line = (i: number) =>
    `function step${i}(input: number[]): number[] { return input.map((x) => x * ${i} + ${i * 7}); }\n`;
  const lines: string[] = [];
  let counted = 0;
  // Grows by the measured tokens per line, then trims the last lines that overshoot.
  while (counted < tokens) {
    const perLine = lines.length === 0 ? 30 : counted / lines.length;
    const more = Math.max(1, Math.floor((tokens - counted) / perLine));
    for (let i = 0; i < more; i++) lines.push(line(lines.length));
    counted = await count(lines.join(""));
  }
  while (lines.length > 1 && counted > tokens) {
    lines.pop();
    counted = await count(lines.join(""));
  }
  return lines.join("");
}

async function tokenCount(peerBaseUrl: string, content: string): Promise<number> {
  const response = await fetch(`${peerBaseUrl.replace(/\/v1$/, "")}/tokenize`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ content }),
  });
  if (!response.ok) throw new Error(`bench: llama-server /tokenize answered ${response.status}`);
  return ((await response.json()) as { tokens: unknown[] }).tokens.length;
}
