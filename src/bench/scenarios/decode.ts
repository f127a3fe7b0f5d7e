import { stat } from "node:fs/promises";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { memoryBandwidth } from "../internal/memory-bandwidth.js";
import { median } from "../internal/stats.js";

const PROMPT = "Write a TypeScript module that parses CSV files with quoted fields, then explain it.";

/**
 * Decode speed through the whole server (WebSocket, events, JSON) against the raw engine on the
 * same model and prompt, alternating so both see the same machine state; and the raw engine against
 * the machine's limit (memory bandwidth over the bytes of weights read per token).
 */
export async function decodeScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const runs = ctx.quick ? 3 : 5;
  const maxOutputTokens = ctx.quick ? 64 : 256;
  const raw: number[] = [];
  const served: number[] = [];
  let tokens = 0;
  await using socket = await BenchSocket.open(ctx.wsUrl);
  for (let i = 0; i < runs; i++) {
    // Same definition on both sides: output tokens over the wall time from request to last token.
    // The prompt is cached after the first run, so both are essentially pure decoding.
    const started = performance.now();
    for await (const event of ctx.engine.generate({
      messages: [{ role: "user", content: PROMPT }],
      maxOutputTokens,
      temperature: 0,
    })) {
      if (event.type === "done")
        raw.push((event.result.usage.outputTokens * 1000) / (performance.now() - started));
    }

    const sent = socket.send({
      type: "response.create",
      store: false,
      input: PROMPT,
      max_output_tokens: maxOutputTokens,
      temperature: 0,
    });
    const events = await socket.untilDone();
    const end = events.at(-1)!;
    tokens = (end.event.response as { usage: { output_tokens: number } }).usage.output_tokens;
    served.push((tokens * 1000) / (end.at - sent));
    ctx.log(
      `decode run ${i + 1}/${runs}: raw ${raw.at(-1)!.toFixed(1)} tok/s, served ${served.at(-1)!.toFixed(1)} tok/s`,
    );
  }
  const bandwidth = memoryBandwidth(ctx.sizes.bandwidthBytes);
  const modelBytes = (await stat(ctx.modelPath)).size;
  return [
    row(
      {
        scenario: "decode",
        metric: "decode tokens/s: through the server (WebSocket, client-side) vs the raw engine, same prompt",
        value: median(served),
        baseline: median(raw),
        unit: "tok/s",
        target: ">= 0.97x",
        detail: `${tokens} output tokens, median of ${runs}`,
      },
      (ratio) => ratio >= 0.97,
    ),
    infoRow({
      scenario: "decode",
      metric: "raw engine decode tokens/s vs the memory-bandwidth limit (bandwidth / model bytes)",
      value: median(raw),
      baseline: bandwidth / modelBytes,
      unit: "tok/s",
      detail: `${(bandwidth / 1e9).toFixed(1)} GB/s (one thread copying ${ctx.sizes.bandwidthBytes >> 20} MiB, read + written), ${(modelBytes / 1e6).toFixed(0)} MB of weights read per token`,
    }),
  ];
}
