import { randomUUID } from "node:crypto";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { median } from "../internal/stats.js";
import { history } from "./ttft.js";

/** About 100 tokens of the synthetic vocabulary (a little over two characters a token). */
const MESSAGE =
  "Now rename step3 to scale everywhere, update its callers in the same file, keep the exported " +
  "names stable for other modules, and add a short test that checks scale on an empty array and " +
  "on three numbers.";

/** Words a person types between two drafts (a face sends one per word boundary, throttled). */
const WORDS_PER_DRAFT = 4;

/**
 * Follow-up TTFT of a ~100-token message on a pre-warmed conversation of up to 1,500 tokens, with
 * type-ahead (the message sent as `spark.draft`s while "typed", each evaluated before the next, as
 * a person types far slower than prefill) against without (the same follow-up, no drafts). One
 * run, both ways, on the same server and model.
 */
export async function typeAheadScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const runs = ctx.quick ? 3 : 7;
  const conversationTokens = Math.min(1500, ctx.historyTokens);
  const withDrafts: number[] = [];
  const without: number[] = [];
  let inputTokens = 0;
  let cachedWith = 0;
  let cachedWithout = 0;
  for (let i = 0; i < runs; i++) {
    for (const typeAhead of [true, false]) {
      await using socket = await BenchSocket.open(ctx.wsUrl);
      socket.send({
        type: "response.create",
        generate: false,
        store: false,
        input: history(randomUUID(), conversationTokens),
      });
      const prewarm = (await socket.untilDone()).at(-1)!.event.response as { id: string };
      if (typeAhead) await typeDrafts(socket, prewarm.id);
      const sent = socket.send({
        type: "response.create",
        store: false,
        previous_response_id: prewarm.id,
        input: [{ role: "user", content: MESSAGE }],
        max_output_tokens: 1,
      });
      const events = await socket.untilDone();
      const first = events.find((e) => e.event.type === "response.output_text.delta") ?? events.at(-1)!;
      const usage = (events.at(-1)!.event.response as { usage: Usage }).usage;
      inputTokens = usage.input_tokens;
      if (typeAhead) {
        withDrafts.push(first.at - sent);
        cachedWith = usage.input_tokens_details.cached_tokens;
      } else {
        without.push(first.at - sent);
        cachedWithout = usage.input_tokens_details.cached_tokens;
      }
    }
    ctx.log(
      `type-ahead run ${i + 1}/${runs}: with ${withDrafts.at(-1)!.toFixed(0)} ms, without ${without.at(-1)!.toFixed(0)} ms`,
    );
  }
  return [
    row(
      {
        scenario: "type-ahead",
        metric: `follow-up TTFT, ~100-token message on a ${conversationTokens}-token conversation: with type-ahead vs without`,
        value: median(withDrafts),
        baseline: median(without),
        unit: "ms",
        target: "<= 0.5x",
        detail: `${inputTokens} input tokens; cached ${cachedWith} with drafts, ${cachedWithout} without; median of ${runs}`,
      },
      (ratio) => ratio <= 0.5,
    ),
  ];
}

type Usage = { input_tokens: number; input_tokens_details: { cached_tokens: number } };

/** Sends the message as it grows, word group by word group, waiting for each draft to be evaluated. */
async function typeDrafts(socket: BenchSocket, previous: string): Promise<void> {
  const words = MESSAGE.split(" ");
  for (let typed = WORDS_PER_DRAFT; typed < words.length + WORDS_PER_DRAFT; typed += WORDS_PER_DRAFT) {
    socket.send({
      type: "spark.draft",
      previous_response_id: previous,
      draft: words.slice(0, typed).join(" "),
    });
    for (;;) {
      const { event } = await socket.next();
      if (event.type === "error") throw new Error(`bench: ${JSON.stringify(event)}`);
      if (event.type !== "spark.draft.done") continue;
      if (event.outcome !== "evaluated") throw new Error(`bench: a draft ended ${String(event.outcome)}`);
      break;
    }
  }
}
