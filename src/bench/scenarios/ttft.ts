import { randomUUID } from "node:crypto";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { median } from "../internal/stats.js";

type Item = { role: "developer" | "user" | "assistant"; content: string };

/** A coding conversation of roughly `tokens` tokens; the nonce comes first so no cache holds it. */
export function history(nonce: string, tokens: number): Item[] {
  const items: Item[] = [
    { role: "developer", content: `Session ${nonce}. You are Spark, a coding assistant.` },
  ];
  const snippet = (i: number) =>
    `function step${i}(input: number[]): number[] {\n  return input.map((x) => x * ${i} + ${i * 7});\n}\n`;
  // The synthetic tokenizer averages a little over two characters per token.
  for (let turn = 0; tokens > 0; turn++) {
    const code = Array.from({ length: 6 }, (_, i) => snippet(turn * 6 + i)).join("");
    items.push({ role: "user", content: `Review this:\n${code}` });
    items.push({ role: "assistant", content: `Looks fine. Consider naming step${turn} better.` });
    tokens -= (code.length + 60) / 2.2;
  }
  return items;
}

/** Client-side time to the first token (or to the end, if the model stopped at once), and the usage. */
export async function firstTokenMs(
  socket: BenchSocket,
  event: object,
): Promise<{ ms: number; inputTokens: number; cachedTokens: number }> {
  const sent = socket.send(event);
  const events = await socket.untilDone();
  const first = events.find((e) => e.event.type === "response.output_text.delta") ?? events.at(-1)!;
  const { usage } = events.at(-1)!.event.response as {
    usage: { input_tokens: number; input_tokens_details: { cached_tokens: number } };
  };
  return {
    ms: first.at - sent,
    inputTokens: usage.input_tokens,
    cachedTokens: usage.input_tokens_details.cached_tokens,
  };
}

/**
 * Time to first token of a follow-up on a 2,000-token conversation: warm (pre-warmed state,
 * `previous_response_id`, only the question sent) against cold (the stateless path: the whole
 * history resent and evaluated).
 */
export async function ttftScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const runs = ctx.quick ? 3 : 7;
  const question: Item = { role: "user", content: "Now rename step3 to scale and update callers." };
  const warm: number[] = [];
  const cold: number[] = [];
  let inputTokens = 0;
  for (let i = 0; i < runs; i++) {
    {
      await using socket = await BenchSocket.open(ctx.wsUrl);
      socket.send({
        type: "response.create",
        generate: false,
        store: false,
        input: history(randomUUID(), ctx.historyTokens),
      });
      const prewarm = (await socket.untilDone()).at(-1)!.event.response as { id: string };
      const measured = await firstTokenMs(socket, {
        type: "response.create",
        store: false,
        previous_response_id: prewarm.id,
        input: [question],
        max_output_tokens: 1,
      });
      warm.push(measured.ms);
    }
    {
      await using socket = await BenchSocket.open(ctx.wsUrl);
      const measured = await firstTokenMs(socket, {
        type: "response.create",
        store: false,
        input: [...history(randomUUID(), ctx.historyTokens), question],
        max_output_tokens: 1,
      });
      cold.push(measured.ms);
      inputTokens = measured.inputTokens;
    }
    ctx.log(
      `ttft run ${i + 1}/${runs}: warm ${warm.at(-1)!.toFixed(0)} ms, cold ${cold.at(-1)!.toFixed(0)} ms`,
    );
  }
  return [
    row(
      {
        scenario: "ttft",
        metric: `follow-up TTFT, ${ctx.historyTokens}-token history: warm (previous_response_id) vs cold (resend all)`,
        value: median(warm),
        baseline: median(cold),
        unit: "ms",
        target: "<= 0.5x (aim 0.1x)",
        detail: `${inputTokens} input tokens, median of ${runs}`,
      },
      (ratio) => ratio <= 0.5,
    ),
  ];
}
