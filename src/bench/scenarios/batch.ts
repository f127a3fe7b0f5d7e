import { randomUUID } from "node:crypto";
import { LlamaEngine } from "../../engine/llama/llama-engine.js";
import { ModelRegistry } from "../../server/model-registry.js";
import { SparkServer } from "../../server/spark-server.js";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { median } from "../internal/stats.js";

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

/** `n` responses started together: aggregate output tokens/s from the first send to the last token. */
async function aggregate(sockets: BenchSocket[], n: number, maxOutputTokens: number): Promise<number> {
  const runs = await Promise.all(
    sockets
      .slice(0, n)
      .map((socket, i) =>
        stream(socket, { input: prompt(`Stream ${i}`), max_output_tokens: maxOutputTokens }),
      ),
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

/**
 * Continuous batching: aggregate decode tokens/s with 1, 2, 4 and 8 concurrent WebSocket streams
 * on an engine with 8 sequences, and the time to first token of a new request while the others
 * decode.
 */
export async function batchScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const counts = ctx.sizes.batchStreams;
  const most = Math.max(...counts);
  const maxOutputTokens = ctx.sizes.batchOutputTokens;
  const probes = ctx.quick ? 3 : 5;
  await using engine = await LlamaEngine.create({
    modelPath: ctx.modelPath,
    sequences: most,
    contextSize: 1024,
  });
  await using models = new ModelRegistry();
  models.add(engine.info.id, engine);
  await using server = await SparkServer.start({ models });
  const url = `${server.url.replace(/^http/, "ws")}/v1/responses`;
  const sockets = await Promise.all(Array.from({ length: most }, () => BenchSocket.open(url)));
  try {
    // Warm-up: every sequence decodes once, unmeasured.
    await aggregate(sockets, most, 4);
    const rates = new Map<number, number>();
    const ttfts = new Map<number, number[]>();
    for (const n of counts) {
      rates.set(n, await aggregate(sockets, n, maxOutputTokens));
      const probe = sockets[n - 1]!;
      const samples: number[] = [];
      // Each probe gets its own background load: a probe that waits for the others to finish
      // would leave the next one without any.
      for (let i = 0; i < probes; i++)
        samples.push(await ttftUnderLoad(sockets.slice(0, n - 1), probe, `Probe ${i}`, maxOutputTokens));
      ttfts.set(n, samples);
      ctx.log(
        `batch ${n} stream(s): ${rates.get(n)!.toFixed(1)} tok/s aggregate; new request's TTFT with ${n - 1} decoding ${ttfts
          .get(n)!
          .map((ms) => ms.toFixed(0))
          .join(", ")} ms`,
      );
    }
    const single = rates.get(counts[0]!)!;
    const result: BenchRow[] = [];
    let previous = 1;
    for (const n of counts.slice(1)) {
      const ratio = rates.get(n)! / single;
      const grew = ratio > previous;
      previous = ratio;
      result.push(
        row(
          {
            scenario: "batch",
            metric: `aggregate decode tokens/s: ${n} concurrent WebSocket streams vs ${counts[0]}`,
            value: rates.get(n)!,
            baseline: single,
            unit: "tok/s",
            target: "grows with N",
            detail: `${maxOutputTokens} output tokens per stream, greedy, engine with ${most} sequences`,
          },
          () => grew,
        ),
      );
    }
    const loaded = counts.at(-1)!;
    result.push(
      infoRow({
        scenario: "batch",
        metric: `new request's TTFT with ${loaded - 1} other streams decoding vs alone`,
        value: median(ttfts.get(loaded)!),
        baseline: median(ttfts.get(counts[0]!)!),
        unit: "ms",
        detail: `median of ${probes} one-token requests, each sent once the others are decoding ${maxOutputTokens}-token responses; median / worst with ${counts.map((n) => `${n - 1} decoding: ${median(ttfts.get(n)!).toFixed(0)} / ${Math.max(...ttfts.get(n)!).toFixed(0)} ms`).join(", ")}`,
      }),
    );
    return result;
  } finally {
    await Promise.all(sockets.map((socket) => socket[Symbol.asyncDispose]()));
  }
}
