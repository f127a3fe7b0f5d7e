import { readFileSync } from "node:fs";
import WebSocket from "ws";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { ServerProcess } from "../internal/server-process.js";
import { percentile } from "../internal/stats.js";

interface Outcome {
  /** `completed`, or the error code the client was given. */
  result: string;
  firstTokenMs: number | null;
  positions: number;
  /** Sequence numbers were 0, 1, 2, … with no gap or repeat. */
  gapless: boolean;
}

/** Resident memory of a process in KiB, from /proc; undefined where there is none. */
function rssKib(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** One conversation: one response.create, every event checked, one outcome. */
function converse(url: string, input: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    const started = performance.now();
    let expected = 0;
    const outcome: Outcome = { result: "lost", firstTokenMs: null, positions: 0, gapless: true };
    const finish = (result: string) => {
      outcome.result = result;
      ws.close();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish("lost"), 120_000);
    ws.on("open", () =>
      ws.send(JSON.stringify({ type: "response.create", model: "", input, max_output_tokens: 40 })),
    );
    ws.on("message", (data) => {
      const event = JSON.parse(String(data)) as {
        type: string;
        sequence_number: number;
        error?: { code: string };
        position?: number;
        response?: { error?: { code: string } };
      };
      if (event.sequence_number !== expected++) outcome.gapless = false;
      if (event.type === "response.queued") outcome.positions++;
      if (event.type === "response.output_text.delta" && outcome.firstTokenMs === null)
        outcome.firstTokenMs = performance.now() - started;
      if (event.type === "error") {
        clearTimeout(timer);
        finish(event.error?.code ?? "error");
      } else if (event.type === "response.failed") {
        clearTimeout(timer);
        finish(event.response?.error?.code ?? "failed");
      } else if (event.type === "response.completed" || event.type === "response.incomplete") {
        clearTimeout(timer);
        finish("completed");
      }
    });
    ws.on("error", () => {
      clearTimeout(timer);
      finish("connection_error");
    });
  });
}

/**
 * A bounded load test on loopback: many concurrent WebSocket conversations against one server
 * (scripted engine, limits set low). Every request must either complete or get a clear
 * queue/rate-limit error: none lost or duplicated (sequence numbers checked), queue positions
 * reported, and the server's memory back near its baseline afterwards.
 */
export async function loadScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const connections = ctx.sizes.loadConnections;
  await using server = await ServerProcess.scripted(400, [
    "--max-concurrent",
    "4",
    "--max-queue",
    String(Math.floor(connections / 2)),
    "--queue-timeout-ms",
    "60000",
    "--log",
    "off",
  ]);
  const url = `${server.baseUrl.replace(/^http/, "ws")}/responses`;
  const input = "Summarise the change in one line, please.";
  const alone = await converse(url, input);
  const rssBefore = rssKib(server.pid);
  const outcomes = await Promise.all(Array.from({ length: connections }, () => converse(url, input)));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const rssAfter = rssKib(server.pid);

  const counts = new Map<string, number>();
  for (const outcome of outcomes) counts.set(outcome.result, (counts.get(outcome.result) ?? 0) + 1);
  const answered = outcomes.filter((o) => o.result !== "lost" && o.result !== "connection_error").length;
  const gapless = outcomes.every((o) => o.gapless);
  const ttfts = outcomes.flatMap((o) => (o.firstTokenMs === null ? [] : [o.firstTokenMs]));
  const sawPositions = outcomes.filter((o) => o.positions > 0).length;
  const summary = `${[...counts].map(([result, n]) => `${result} ${n}`).join(", ")}; ${sawPositions} conversations were told their queue position; limits: 4 concurrent, queue ${Math.floor(connections / 2)}`;
  ctx.log(`load: ${summary}`);
  const rows: BenchRow[] = [
    row(
      {
        scenario: "load",
        metric: `${connections} concurrent conversations: answered exactly once (completed or a clear error), sequence numbers gapless`,
        value: gapless ? answered : 0,
        baseline: connections,
        unit: "requests",
        target: "= 1x",
        detail: summary,
      },
      (ratio) => ratio === 1,
    ),
  ];
  if (ttfts.length > 0 && alone.firstTokenMs !== null) {
    rows.push(
      infoRow({
        scenario: "load",
        metric: "p50 time to first token under load vs alone",
        value: percentile(ttfts, 50),
        baseline: alone.firstTokenMs,
        unit: "ms",
        detail: `${ttfts.length} streams produced tokens`,
      }),
      infoRow({
        scenario: "load",
        metric: "p99 time to first token under load vs alone",
        value: percentile(ttfts, 99),
        baseline: alone.firstTokenMs,
        unit: "ms",
      }),
    );
  }
  if (rssBefore !== undefined && rssAfter !== undefined) {
    rows.push(
      infoRow({
        scenario: "load",
        metric: "server resident memory 1 s after the load vs before it",
        value: rssAfter / 1024,
        baseline: rssBefore / 1024,
        unit: "MiB",
      }),
    );
  }
  return rows;
}
