import { randomUUID } from "node:crypto";
import { physicalCoreCount } from "../../engine/llama/internal/physical-cores.js";
import { LlamaEngine } from "../../engine/llama/llama-engine.js";
import { ModelRegistry } from "../../server/model-registry.js";
import { SparkServer } from "../../server/spark-server.js";
import type { BatchModel, BenchContext } from "../bench-context.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { streamChat } from "../internal/chat-stream.js";
import { PeerServer } from "../internal/peer-server.js";
import { median } from "../internal/stats.js";

/** Tokens per sequence (llama-server: per slot, its context being this times its slots). */
const SEQUENCE_CONTEXT = 1024;

interface Streamed {
  sent: number;
  /** Arrival of the first delta (or of the end, when nothing was generated). */
  first: number;
  end: number;
  tokens: number;
}

/** Runs one response to its end; `onFirst` is called when its first delta arrives. */
async function stream(socket: BenchSocket, request: object, onFirst?: () => void): Promise<Streamed> {
  const sent = socket.send({ type: "response.create", store: false, temperature: 0, ...request });
  let first = 0;
  for (;;) {
    const { event, at } = await socket.next();
    // A cancel that crossed its response's end on the wire: nothing was running to cancel.
    if (event.type === "error" && (event.error as { code?: string }).code === "response_not_active") continue;
    if (event.type === "error" || event.type === "response.failed")
      throw new Error(`bench: ${JSON.stringify(event)}`);
    if (event.type === "response.output_text.delta" && first === 0) {
      first = at;
      onFirst?.();
    }
    if (event.type === "response.completed" || event.type === "response.incomplete") {
      if (first === 0) onFirst?.();
      const usage = (event.response as { usage: { output_tokens: number } }).usage;
      return { sent, first: first || at, end: at, tokens: usage.output_tokens };
    }
  }
}

const prompt = (label: string) =>
  `${label} ${randomUUID()}: write a TypeScript function that merges two sorted arrays, then test it.`;

/** `prompts.length` responses started together: aggregate output tokens/s from the first send to the last token. */
async function aggregate(
  sockets: BenchSocket[],
  prompts: string[],
  maxOutputTokens: number,
): Promise<number> {
  const runs = await Promise.all(
    prompts.map((input, i) => stream(sockets[i]!, { input, max_output_tokens: maxOutputTokens })),
  );
  const start = Math.min(...runs.map((r) => r.sent));
  const end = Math.max(...runs.map((r) => r.end));
  return (runs.reduce((sum, r) => sum + r.tokens, 0) * 1000) / (end - start);
}

/**
 * Time to first token of a new one-token request on `probe`, sent once every `background` socket
 * is decoding a response of its own (cancelled as soon as the probe has its token).
 */
async function ttftUnderLoad(
  background: BenchSocket[],
  probe: BenchSocket,
  label: string,
  maxOutputTokens: number,
): Promise<number> {
  let decoding = 0;
  let allDecoding: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    allDecoding = resolve;
  });
  const finished = background.map(() => false);
  const runs = background.map((socket, i) =>
    stream(socket, { input: prompt(`Stream ${i}`), max_output_tokens: maxOutputTokens }, () => {
      if (++decoding === background.length) allDecoding();
    }).finally(() => {
      finished[i] = true;
    }),
  );
  if (background.length === 0) allDecoding();
  await ready;
  const probed = await stream(probe, { input: prompt(label), max_output_tokens: 1 });
  for (const [i, socket] of background.entries()) if (!finished[i]) socket.send({ type: "response.cancel" });
  await Promise.all(runs);
  return probed.first - probed.sent;
}

/** Concurrent streams' aggregates and TTFTs on one model: Spark's, and llama-server's when there is one. */
interface Measured {
  spark: Map<number, number>;
  ttfts: Map<number, number[]>;
  peer: Map<number, number> | undefined;
}

/** Runs one stream per prompt, together, on one side; returns their aggregate output tokens/s. */
type Side = (prompts: string[], maxOutputTokens: number) => Promise<number>;

/**
 * Continuous batching: aggregate decode tokens/s with 1, 2, 4 and 8 concurrent streams on an engine
 * with 8 sequences, against llama-server with 8 slots (`--parallel`) and the same total context on
 * the same model, for each of `batchModels`; and, on the first, the time to first token of a new
 * request while the others decode. Both servers stay up; each count runs on one then the other,
 * in turns (A B, B A), so a change in the machine's load falls on both, and the median of its
 * rounds is reported.
 */
export async function batchScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const result: BenchRow[] = [];
  if (!("binary" in ctx.llamaServer))
    ctx.log(`batch: rows against llama-server left out: ${ctx.llamaServer.missing}`);
  for (const [i, model] of ctx.batchModels.entries())
    result.push(...batchRows(ctx, model, await measure(ctx, model, i === 0)));
  return result;
}

async function measure(ctx: BenchContext, model: BatchModel, probe: boolean): Promise<Measured> {
  const counts = ctx.sizes.batchStreams;
  const most = Math.max(...counts);
  await using engine = await LlamaEngine.create({
    modelPath: model.path,
    sequences: most,
    contextSize: SEQUENCE_CONTEXT,
  });
  await using models = new ModelRegistry();
  models.add(engine.info.id, engine);
  await using server = await SparkServer.start({ models });
  await using peer =
    "binary" in ctx.llamaServer
      ? await PeerServer.start({
          binary: ctx.llamaServer.binary,
          modelPath: model.path,
          contextSize: SEQUENCE_CONTEXT * most,
          threads: physicalCoreCount(),
          parallel: most,
        })
      : undefined;
  const url = `${server.url.replace(/^http/, "ws")}/v1/responses`;
  const sockets = await Promise.all(Array.from({ length: most }, () => BenchSocket.open(url)));
  try {
    const sides: [string, Side, Map<number, number>][] = [
      ["Spark", (prompts, tokens) => aggregate(sockets, prompts, tokens), new Map()],
    ];
    if (peer)
      sides.push([
        "llama-server",
        (prompts, tokens) => peerAggregate(peer.baseUrl, prompts, tokens),
        new Map(),
      ]);
    const prompts = (n: number) => Array.from({ length: n }, (_, i) => prompt(`Stream ${i}`));
    // Warm-up: every sequence and slot decodes once, unmeasured.
    for (const [, run] of sides) await run(prompts(most), 4);
    // A count's runs are seconds long, so one run says little on a shared machine: each count runs
    // `batchRounds` times on each side, in rounds over all counts, and its median is kept.
    const samples = new Map(sides.map(([name]) => [name, new Map(counts.map((n) => [n, [] as number[]]))]));
    for (let round = 0; round < ctx.sizes.batchRounds; round++) {
      for (const [i, n] of counts.entries()) {
        // Both sides get the same prompts (new ones each round, so neither finds them cached): a
        // random-weight model's replies end at lengths that depend on the prompt.
        const asked = prompts(n);
        for (const [name, run] of (round + i) % 2 === 0 ? sides : [...sides].reverse()) {
          const rate = await run(asked, model.outputTokens);
          samples.get(name)!.get(n)!.push(rate);
          ctx.log(`batch ${model.label}, ${name}, ${n} stream(s): ${rate.toFixed(1)} tok/s aggregate`);
        }
      }
    }
    for (const [name, , rates] of sides)
      for (const n of counts) rates.set(n, median(samples.get(name)!.get(n)!));
    const ttfts = new Map<number, number[]>();
    if (probe) {
      const probes = ctx.quick ? 3 : 5;
      for (const n of counts) {
        const samples: number[] = [];
        // Each probe gets its own background load: a probe that waits for the others to finish
        // would leave the next one without any.
        for (let i = 0; i < probes; i++)
          samples.push(
            await ttftUnderLoad(sockets.slice(0, n - 1), sockets[n - 1]!, `Probe ${i}`, model.outputTokens),
          );
        ttfts.set(n, samples);
        ctx.log(
          `batch ${model.label}: new request's TTFT with ${n - 1} decoding: ${samples.map((ms) => ms.toFixed(0)).join(", ")} ms`,
        );
      }
    }
    return { spark: sides[0]![2], ttfts, peer: sides[1]?.[2] };
  } finally {
    await Promise.all(sockets.map((socket) => socket[Symbol.asyncDispose]()));
  }
}

/** One streamed Chat Completion per prompt, started together on llama-server: aggregate output tokens/s. */
async function peerAggregate(baseUrl: string, prompts: string[], maxTokens: number): Promise<number> {
  const runs = await Promise.all(
    prompts.map((content) =>
      streamChat(baseUrl, {
        messages: [{ role: "user", content }],
        max_tokens: maxTokens,
        temperature: 0,
      }),
    ),
  );
  const start = Math.min(...runs.map((r) => r.sentAt));
  const end = Math.max(...runs.map((r) => r.lastAt));
  return (runs.reduce((sum, r) => sum + r.tokens, 0) * 1000) / (end - start);
}

/**
 * Whether a count's aggregate, as a ratio to one stream's, still grows: above 1x (a ratio below it
 * never holds) and above the ratio of the count before it.
 */
export function growsWithN(ratio: number, previous: number): boolean {
  return ratio > Math.max(1, previous);
}

function batchRows(ctx: BenchContext, model: BatchModel, { spark, ttfts, peer }: Measured): BenchRow[] {
  const counts = ctx.sizes.batchStreams;
  const most = Math.max(...counts);
  const single = counts[0]!;
  const rows: BenchRow[] = [];
  const setup = `${model.outputTokens} output tokens per stream, greedy, ${most} sequences of ${SEQUENCE_CONTEXT} tokens, median of ${ctx.sizes.batchRounds} runs`;
  if (peer) {
    for (const n of counts) {
      rows.push(
        row(
          {
            scenario: "batch",
            metric: `${model.label}: aggregate decode tokens/s, ${n} concurrent streams vs llama-server --parallel ${most}`,
            value: spark.get(n)!,
            baseline: peer.get(n)!,
            unit: "tok/s",
            target: ">= 1.0x",
            detail: `${setup}; Spark over WebSocket, llama-server over streamed Chat Completions with ${most} slots and a ${SEQUENCE_CONTEXT * most}-token context`,
          },
          (ratio) => ratio >= 1,
        ),
      );
    }
  }
  let previous = 1;
  for (const n of counts.slice(1)) {
    const before = previous;
    previous = spark.get(n)! / spark.get(single)!;
    const peerScaling = peer
      ? `; llama-server: ${(peer.get(n)! / peer.get(single)!).toFixed(2)}x its own`
      : "";
    rows.push(
      row(
        {
          scenario: "batch",
          metric: `${model.label}: aggregate decode tokens/s, ${n} concurrent WebSocket streams vs ${single}`,
          value: spark.get(n)!,
          baseline: spark.get(single)!,
          unit: "tok/s",
          target: "grows with N",
          detail: `${setup}${peerScaling}`,
        },
        (ratio) => growsWithN(ratio, before),
      ),
    );
  }
  if (ttfts.size > 0) {
    const loaded = counts.at(-1)!;
    rows.push(
      infoRow({
        scenario: "batch",
        metric: `${model.label}: new request's TTFT with ${loaded - 1} other streams decoding vs alone`,
        value: median(ttfts.get(loaded)!),
        baseline: median(ttfts.get(single)!),
        unit: "ms",
        detail: `median of ${ttfts.get(single)!.length} one-token requests, each sent once the others are decoding ${model.outputTokens}-token responses; median / worst with ${counts.map((n) => `${n - 1} decoding: ${median(ttfts.get(n)!).toFixed(0)} / ${Math.max(...ttfts.get(n)!).toFixed(0)} ms`).join(", ")}`,
      }),
    );
  }
  return rows;
}
