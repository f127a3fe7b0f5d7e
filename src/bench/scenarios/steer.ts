import { randomUUID } from "node:crypto";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { median } from "../internal/stats.js";
import { history } from "./ttft.js";

type Timed = { event: { type: string; [key: string]: unknown }; at: number };

/** Reads events until `match`, returning the matching one. */
async function until(socket: BenchSocket, match: (e: Timed) => boolean): Promise<Timed> {
  for (;;) {
    const next = await socket.next();
    if (next.event.type === "error" || next.event.type === "response.failed")
      throw new Error(`bench: ${JSON.stringify(next.event)}`);
    if (match(next)) return next;
  }
}

const isEnd = (e: Timed) => e.event.type === "response.completed" || e.event.type === "response.incomplete";
/** A text delta; a response that ends first (a random model can stop at once) is an error, not a hang. */
const isDelta = (e: Timed) => {
  if (isEnd(e))
    throw new Error(`bench: the response ended before the text it was waited for (${e.event.type})`);
  return e.event.type === "response.output_text.delta";
};

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
    const conversation = [
      ...history(randomUUID(), ctx.historyTokens / 2),
      { role: "user", content: "Rewrite step1." },
    ];
    await using socket = await BenchSocket.open(ctx.wsUrl);
    const start = async () => {
      socket.send({
        type: "response.create",
        store: true,
        input: conversation,
        max_output_tokens: 400,
        temperature: 0,
      });
      const created = await until(socket, (e) => e.event.type === "response.created");
      for (let n = 0; n < 4; n++) await until(socket, isDelta);
      return (created.event.response as { id: string }).id;
    };

    const first = await start();
    const sent = socket.send({ type: "response.steer", previous_response_id: first, input: redirect });
    await until(socket, (e) => e.event.type === "response.created");
    steered.push((await until(socket, isDelta)).at - sent);
    socket.send({ type: "response.cancel" });
    await until(socket, isEnd);

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
    resentChained.push((await until(socket, isDelta)).at - cancelled);
    await until(socket, isEnd);

    // A client without server-side state resends everything; a fresh nonce keeps it uncached.
    const fresh = [
      ...history(randomUUID(), ctx.historyTokens / 2),
      { role: "user", content: "Rewrite step1." },
    ];
    await start();
    const third = socket.send({ type: "response.cancel" });
    await until(socket, isEnd);
    socket.send({
      type: "response.create",
      store: false,
      input: [...fresh, { role: "user", content: redirect }],
      max_output_tokens: 8,
    });
    resentAll.push((await until(socket, isDelta)).at - third);
    await until(socket, isEnd);
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
