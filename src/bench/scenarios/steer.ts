import { randomUUID } from "node:crypto";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { median } from "../internal/stats.js";
import { history } from "./ttft.js";

type Timed = { event: { type: string; [key: string]: unknown }; at: number };

/**
 * Reads events until `match`, returning the matching one. A cancel that crossed its response's own
 * end is answered `response_not_active`; that is skipped.
 */
async function until(socket: BenchSocket, match: (e: Timed) => boolean): Promise<Timed> {
  for (;;) {
    const next = await socket.next();
    const code = (next.event.error as { code?: string } | undefined)?.code;
    if (next.event.type === "error" && code === "response_not_active") continue;
    if (next.event.type === "error" || next.event.type === "response.failed")
      throw new Error(`bench: ${JSON.stringify(next.event)}`);
    if (match(next)) return next;
  }
}

const isDelta = (e: Timed) => e.event.type === "response.output_text.delta";
const isEnd = (e: Timed) => e.event.type === "response.completed" || e.event.type === "response.incomplete";
/** The first text of a response, or its end when it has none (a random model can stop at once). */
const isOutput = (e: Timed) => isDelta(e) || isEnd(e);

/** Cancels the response that produced `last`, unless `last` was its end already. */
async function cancel(socket: BenchSocket, last: Timed): Promise<void> {
  if (isEnd(last)) return;
  socket.send({ type: "response.cancel" });
  await until(socket, isEnd);
}

/**
 * Steer sent -> first token of the redirected output, against the two ways to redirect without
 * steering: cancel and resend the whole conversation (a stateless server), and cancel and resend
 * only the new input chained with previous_response_id.
 */
export async function steerScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const runs = ctx.quick ? 3 : 5;
  const redirect = "Stop. Use tabs for indentation instead.";
  const steered: number[] = [];
  const resentAll: number[] = [];
  const resentChained: number[] = [];
  for (let i = 0; i < runs; i++) {
    await using socket = await BenchSocket.open(ctx.wsUrl);
    const conversation = () => [
      ...history(randomUUID(), ctx.historyTokens / 2),
      { role: "user", content: "Rewrite step1." },
    ];
    // A response under way with a few tokens out; one that ends sooner is retried on a new
    // conversation. Returns its id.
    const start = async () => {
      for (let attempt = 0; attempt < 5; attempt++) {
        const input = conversation();
        socket.send({ type: "response.create", store: true, input, max_output_tokens: 400, temperature: 0 });
        const created = await until(socket, (e) => e.event.type === "response.created");
        let last = created;
        for (let n = 0; n < 4 && !isEnd(last); n++) last = await until(socket, isOutput);
        if (!isEnd(last)) return (created.event.response as { id: string }).id;
      }
      throw new Error("bench: the model ended five responses within four tokens");
    };

    const first = await start();
    const sent = socket.send({ type: "response.steer", previous_response_id: first, input: redirect });
    await until(socket, (e) => e.event.type === "response.created");
    const redirected = await until(socket, isOutput);
    steered.push(redirected.at - sent);
    await cancel(socket, redirected);

    const second = await start();
    const cancelled = socket.send({ type: "response.cancel" });
    await until(socket, isEnd);
    socket.send({
      type: "response.create",
      store: true,
      previous_response_id: second,
      input: redirect,
      max_output_tokens: 8,
    });
    const chained = await until(socket, isOutput);
    resentChained.push(chained.at - cancelled);
    if (!isEnd(chained)) await until(socket, isEnd);

    // A client without server-side state resends everything; a fresh nonce keeps it uncached.
    await start();
    const stopped = socket.send({ type: "response.cancel" });
    await until(socket, isEnd);
    socket.send({
      type: "response.create",
      store: false,
      input: [...conversation(), { role: "user", content: redirect }],
      max_output_tokens: 8,
    });
    const resent = await until(socket, isOutput);
    resentAll.push(resent.at - stopped);
    if (!isEnd(resent)) await until(socket, isEnd);
    ctx.log(
      `steer run ${i + 1}/${runs}: steer ${steered.at(-1)!.toFixed(0)} ms, cancel+chained ${resentChained.at(-1)!.toFixed(0)} ms, cancel+resend all ${resentAll.at(-1)!.toFixed(0)} ms`,
    );
  }
  const detail = `${ctx.historyTokens / 2}-token conversation, median of ${runs}`;
  return [
    row(
      {
        scenario: "steer",
        metric: "steer -> first redirected token vs cancel + resend whole conversation",
        value: median(steered),
        baseline: median(resentAll),
        unit: "ms",
        target: "<= 0.2x",
        detail,
      },
      (ratio) => ratio <= 0.2,
    ),
    row(
      {
        scenario: "steer",
        metric: "steer -> first redirected token vs cancel + resend chained (previous_response_id)",
        value: median(steered),
        baseline: median(resentChained),
        unit: "ms",
        target: "<= 1x",
        detail,
      },
      (ratio) => ratio <= 1,
    ),
  ];
}
