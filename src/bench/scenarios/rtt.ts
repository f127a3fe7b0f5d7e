import http from "node:http";
import { setImmediate as nextTurn } from "node:timers/promises";
import { ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "../../server/model-registry.js";
import { SparkServer } from "../../server/spark-server.js";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { selfSignedCert } from "../internal/self-signed-cert.js";
import { median, percentile } from "../internal/stats.js";
import { timedPost } from "../internal/timed-post.js";

const WARMUP = 5;

/**
 * Round trip of a one-token response, client-side: `response.create` on an open WebSocket against
 * `POST /v1/responses` on a kept-alive HTTP connection and on a new HTTPS connection per request
 * (what a client without a persistent session pays: TCP and TLS handshakes every time). A scripted
 * engine answers, so only the transport is measured.
 */
export async function rttScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const iterations = ctx.sizes.rttIterations;
  await using models = new ModelRegistry();
  models.add("scripted", new ScriptedEngine({ script: () => ({ text: "ok" }) }));
  await using server = await SparkServer.start({ models });
  const cert = await selfSignedCert();
  await using tlsServer = cert.ok ? await SparkServer.start({ models, tls: cert }) : undefined;
  const wsUrl = `${server.url.replace(/^http/, "ws")}/v1/responses`;
  await using socket = await BenchSocket.open(wsUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  using _agent = { [Symbol.dispose]: () => agent.destroy() };

  const request = { model: "scripted", input: "ping", store: false };
  const body = JSON.stringify(request);
  const roundTrip = async (on: BenchSocket) => {
    const sent = on.send({ type: "response.create", ...request });
    return (await on.untilDone()).at(-1)!.at - sent;
  };
  const transports = {
    ws: () => roundTrip(socket),
    keepAlive: () => timedPost(`${server.url}/v1/responses`, body, { agent }),
    https: tlsServer
      ? () => timedPost(`${tlsServer.url}/v1/responses`, body, { agent: false, rejectUnauthorized: false })
      : undefined,
  };
  const times: Record<keyof typeof transports, number[]> = {
    ws: [],
    keepAlive: [],
    https: [],
  };
  const order = ["ws", "keepAlive", "https"] as const;
  for (let i = -WARMUP; i < iterations; i++) {
    // Interleaved in a rotating order, so each transport sees the same machine state; a few turns of
    // the event loop let the previous request's connection teardown (TLS close) finish outside the
    // next measurement, without letting the CPU go idle.
    for (let j = 0; j < order.length; j++) {
      const name = order[(i + WARMUP + j) % order.length]!;
      const measure = transports[name];
      if (!measure) continue;
      for (let turn = 0; turn < 3; turn++) await nextTurn();
      const ms = await measure();
      if (i >= 0) times[name].push(ms);
    }
  }
  const summary = (name: keyof typeof times) =>
    `${median(times[name]).toFixed(2)} ms median, ${percentile(times[name], 90).toFixed(2)} ms p90`;
  ctx.log(
    `rtt: WebSocket ${summary("ws")}; keep-alive HTTP ${summary("keepAlive")}; new HTTPS ${cert.ok ? summary("https") : cert.reason}`,
  );
  const detail = `${iterations} requests each, one-token reply from a scripted engine; p90 ${percentile(times.ws, 90).toFixed(2)} ms on WebSocket`;
  return [
    row(
      {
        scenario: "rtt",
        metric: "one-token round trip: persistent WebSocket vs a new HTTPS connection per request",
        value: median(times.ws),
        baseline: cert.ok ? median(times.https) : Number.NaN,
        unit: "ms",
        target: "<= 0.2x",
        detail: cert.ok
          ? `${detail}, ${percentile(times.https, 90).toFixed(2)} ms on new HTTPS`
          : `${detail}; new-HTTPS baseline skipped: ${cert.reason}`,
      },
      (ratio) => ratio <= 0.2,
    ),
    infoRow({
      scenario: "rtt",
      metric: "one-token round trip: persistent WebSocket vs keep-alive HTTP (POST /v1/responses)",
      value: median(times.ws),
      baseline: median(times.keepAlive),
      unit: "ms",
      detail: `${detail}, ${percentile(times.keepAlive, 90).toFixed(2)} ms on keep-alive HTTP`,
    }),
  ];
}
