import http from "node:http";
import type { Socket } from "node:net";
import WebSocket from "ws";
import type { BenchContext } from "../bench-context.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { ServerProcess } from "../internal/server-process.js";
import { median } from "../internal/stats.js";

/** What one stream cost. */
interface StreamCost {
  tokens: number;
  /** Server CPU time (or the client's wall time where /proc is missing). */
  cpuMs: number;
  /** Server-side wall time of the response (WebSocket only: the response's `timing.total_ms`). */
  serverMs?: number;
  /** Bytes read from the TCP socket: framing, headers and all. */
  wireBytes: number;
  /** Message payloads (WebSocket, after any decompression) or the response body (SSE). */
  payloadBytes: number;
}

const WORDS = ["const", "=", "return", "{", "}", "if", "(", ");", "await", "=>", "let", "for", "of", "new"];

/**
 * `count` code-like words, one token each in the echo engine's reply (`You said: <them>`): common
 * keywords and numbered names from a seeded generator, so the text compresses about as well as
 * code does rather than as a repeated phrase.
 */
function longInput(count: number): string {
  let state = 0x9e3779b9;
  // xorshift32: fixed text from run to run.
  const next = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4_294_967_296;
  };
  return Array.from({ length: count }, (_, i) => {
    const word =
      next() < 0.5 ? WORDS[Math.floor(next() * WORDS.length)]! : `item${Math.floor(next() * 5000)}`;
    return i % 12 === 11 ? `${word}\n` : word;
  }).join(" ");
}

const DELTA_PREFIX = Buffer.from('{"type":"response.output_text.delta"');

async function streamWebSocket(server: ServerProcess, input: string): Promise<StreamCost> {
  // Without permessage-deflate, as Spark's own client connects.
  const ws = new WebSocket(`${server.baseUrl.replace(/^http/, "ws")}/responses`, {
    perMessageDeflate: false,
  });
  let tcp: Socket | undefined;
  ws.once("upgrade", (res) => {
    tcp = res.socket as Socket;
  });
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    const wireBefore = tcp!.bytesRead;
    let payloadBytes = 0;
    const clientStart = performance.now();
    const cpuBefore = server.cpuMs();
    const response = await new Promise<{ usage: { output_tokens: number }; timing: { total_ms: number } }>(
      (resolve, reject) => {
        ws.on("error", reject);
        ws.on("message", (data: Buffer) => {
          payloadBytes += data.length;
          // Deltas are most of the stream; the client reads only the events that end it.
          if (data.subarray(0, DELTA_PREFIX.length).equals(DELTA_PREFIX)) return;
          const event = JSON.parse(data.toString("utf8")) as { type: string; response?: unknown };
          if (event.type === "response.completed" || event.type === "response.incomplete")
            resolve(event.response as never);
          else if (event.type === "error" || event.type === "response.failed")
            reject(new Error(`bench: ${JSON.stringify(event)}`));
        });
        ws.send(JSON.stringify({ type: "response.create", model: "scripted", store: false, input }));
      },
    );
    const cpuAfter = server.cpuMs();
    return {
      tokens: response.usage.output_tokens,
      cpuMs:
        cpuBefore === undefined || cpuAfter === undefined
          ? performance.now() - clientStart
          : cpuAfter - cpuBefore,
      serverMs: response.timing.total_ms,
      wireBytes: tcp!.bytesRead - wireBefore,
      payloadBytes,
    };
  } finally {
    ws.close();
  }
}

async function streamChatCompletions(server: ServerProcess, input: string): Promise<StreamCost> {
  const body = JSON.stringify({
    model: "scripted",
    messages: [{ role: "user", content: input }],
    stream: true,
    stream_options: { include_usage: true },
  });
  const clientStart = performance.now();
  const cpuBefore = server.cpuMs();
  const { payloadBytes, tail, tcp } = await new Promise<{ payloadBytes: number; tail: string; tcp: Socket }>(
    (resolve, reject) => {
      const req = http.request(
        `${server.baseUrl}/chat/completions`,
        {
          method: "POST",
          agent: false,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          let payloadBytes = 0;
          const last: Buffer[] = [];
          res.on("data", (chunk: Buffer) => {
            payloadBytes += chunk.length;
            last.push(chunk);
            if (last.length > 3) last.shift();
          });
          res.on("error", reject);
          res.on("end", () => {
            if (res.statusCode !== 200)
              reject(new Error(`bench: chat completions answered ${res.statusCode}`));
            else
              resolve({
                payloadBytes,
                tail: Buffer.concat(last).toString("utf8"),
                tcp: res.socket as Socket,
              });
          });
        },
      );
      req.on("error", reject);
      req.end(body);
    },
  );
  const cpuAfter = server.cpuMs();
  const usageLine = tail
    .split("\n")
    .reverse()
    .find((line) => line.startsWith("data: {") && line.includes('"usage"'));
  if (!usageLine)
    throw new Error(`bench: the chat completions stream ended without usage: ${tail.slice(-500)}`);
  const usage = (JSON.parse(usageLine.slice("data: ".length)) as { usage: { completion_tokens: number } })
    .usage;
  return {
    tokens: usage.completion_tokens,
    cpuMs:
      cpuBefore === undefined || cpuAfter === undefined
        ? performance.now() - clientStart
        : cpuAfter - cpuBefore,
    wireBytes: tcp.bytesRead,
    payloadBytes,
  };
}

/**
 * Server cost per streamed token, Responses over WebSocket against Chat Completions over SSE: CPU
 * time of a `spark serve` child process on the scripted engine (read alone, from /proc) and bytes on
 * the wire, streaming one long reply flat out. Also whether one stream can outrun any model.
 */
export async function perTokenScenario(ctx: BenchContext): Promise<BenchRow[]> {
  const words = ctx.sizes.perTokenTokens;
  const runs = ctx.sizes.perTokenRuns;
  await using server = await ServerProcess.scripted(0);
  const hasProc = server.cpuMs() !== undefined;
  // Warm-up (JIT, connection set-up paths), not measured.
  await streamWebSocket(server, longInput(2000));
  await streamChatCompletions(server, longInput(2000));

  const input = longInput(words);
  const ws: StreamCost[] = [];
  const sse: StreamCost[] = [];
  for (let i = 0; i < runs; i++) {
    ws.push(await streamWebSocket(server, input));
    sse.push(await streamChatCompletions(server, input));
    const [w, s] = [ws.at(-1)!, sse.at(-1)!];
    ctx.log(
      `per-token run ${i + 1}/${runs}: WebSocket ${w.cpuMs.toFixed(0)} ms CPU, ${w.wireBytes} B; SSE ${s.cpuMs.toFixed(0)} ms CPU, ${s.wireBytes} B (${w.tokens} tokens)`,
    );
  }
  const perToken = (costs: StreamCost[], pick: (c: StreamCost) => number) =>
    median(costs.map((c) => pick(c) / c.tokens));
  const cpuUnit = hasProc ? "µs CPU/token" : "µs wall/token";
  const tokens = ws[0]!.tokens;
  const note = hasProc ? "" : "; no /proc here: client-side wall time, not server CPU";
  const serverRate = median(ws.map((c) => (c.tokens * 1000) / c.serverMs!));
  const cpuRate = median(ws.map((c) => (c.tokens * 1000) / c.cpuMs));
  return [
    row(
      {
        scenario: "per-token",
        metric: "server CPU per streamed token: Responses over WebSocket vs Chat Completions over SSE",
        value: perToken(ws, (c) => c.cpuMs * 1000),
        baseline: perToken(sse, (c) => c.cpuMs * 1000),
        unit: cpuUnit,
        target: "<= 0.7x",
        detail: `${tokens}-token reply, scripted engine flat out, server in a child process; median of ${runs}${note}`,
      },
      (ratio) => ratio <= 0.7,
    ),
    infoRow({
      scenario: "per-token",
      metric: "bytes on the wire per streamed token: WebSocket vs SSE",
      value: perToken(ws, (c) => c.wireBytes),
      baseline: perToken(sse, (c) => c.wireBytes),
      unit: "B/token",
      detail: `payload (WebSocket messages after decompression, SSE body): ${perToken(ws, (c) => c.payloadBytes).toFixed(1)} vs ${perToken(sse, (c) => c.payloadBytes).toFixed(1)} B/token; WebSocket's final events repeat the whole text`,
    }),
    row(
      {
        scenario: "per-token",
        metric: "one WebSocket stream: tokens/s the server sustains alone vs 100,000",
        value: serverRate,
        baseline: 100_000,
        unit: "tok/s",
        target: ">= 1x",
        detail: `tokens / the response's server-side wall time; ${cpuRate.toFixed(0)} tokens per server CPU-second${note}`,
      },
      (ratio) => ratio >= 1,
    ),
  ];
}
