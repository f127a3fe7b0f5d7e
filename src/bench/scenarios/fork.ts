import { randomUUID } from "node:crypto";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { median } from "../internal/stats.js";
import { firstTokenMs, history } from "./ttft.js";

/**
 * Time to first token of a fork's first question (`thread.fork` starts a new chain that resends
 * the parent's history): the engine copies the parent conversation's KV cells into a sequence of
 * its own. Against a fresh conversation of a history as long that nothing holds (evaluated).
 */
export async function forkScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const runs = ctx.quick ? 3 : 7;
  const parentQuestion = { role: "user" as const, content: "Now rename step3 to scale and update callers." };
  const forkQuestion = { role: "user" as const, content: "Instead, add a test for step2." };
  const forked: number[] = [];
  const fresh: number[] = [];
  let inputTokens = 0;
  let cachedTokens = 0;
  for (let i = 0; i < runs; i++) {
    const shared = history(randomUUID(), ctx.historyTokens);
    {
      // The parent: its history evaluated, and a question asked on it (its sequence is in use).
      await using socket = await BenchSocket.open(ctx.wsUrl);
      socket.send({ type: "response.create", generate: false, store: false, input: shared });
      const prewarm = (await socket.untilDone()).at(-1)!.event.response as { id: string };
      await firstTokenMs(socket, {
        type: "response.create",
        store: false,
        previous_response_id: prewarm.id,
        input: [parentQuestion],
        max_output_tokens: 1,
      });
    }
    {
      await using socket = await BenchSocket.open(ctx.wsUrl);
      const measured = await firstTokenMs(socket, {
        type: "response.create",
        store: false,
        input: [...shared, forkQuestion],
        max_output_tokens: 1,
      });
      forked.push(measured.ms);
      inputTokens = measured.inputTokens;
      cachedTokens = measured.cachedTokens;
    }
    {
      await using socket = await BenchSocket.open(ctx.wsUrl);
      const measured = await firstTokenMs(socket, {
        type: "response.create",
        store: false,
        input: [...history(randomUUID(), ctx.historyTokens), forkQuestion],
        max_output_tokens: 1,
      });
      fresh.push(measured.ms);
    }
    ctx.log(
      `fork run ${i + 1}/${runs}: fork ${forked.at(-1)!.toFixed(0)} ms, fresh ${fresh.at(-1)!.toFixed(0)} ms`,
    );
  }
  return [
    row(
      {
        scenario: "fork",
        metric: `fork-then-ask TTFT, ${ctx.historyTokens}-token history: fork (parent's KV copied) vs a fresh conversation (evaluated)`,
        value: median(forked),
        baseline: median(fresh),
        unit: "ms",
        target: "<= 0.5x",
        detail: `${inputTokens} input tokens, ${cachedTokens} of them copied (cached), median of ${runs}`,
      },
      (ratio) => ratio <= 0.5,
    ),
  ];
}
