import { randomUUID } from "node:crypto";
import http from "node:http";
import { physicalCoreCount } from "../../engine/llama/internal/physical-cores.js";
import {
  ensureSyntheticModel,
  type SyntheticQuant,
  type SyntheticShapeName,
} from "../../engine/synthetic/synthetic-model.js";
import { type BenchRow, infoRow, row } from "../bench-report.js";
import { BenchSocket } from "../internal/bench-socket.js";
import { type Streamed, streamChat } from "../internal/chat-stream.js";
import { PeerServer } from "../internal/peer-server.js";
import { ServerProcess } from "../internal/server-process.js";
import { median } from "../internal/stats.js";
import { timedPost } from "../internal/timed-post.js";
import { history } from "./ttft.js";

export interface PeerOptions {
  /** The `llama-server` binary to compare with (`--peer-bin`). */
  peerBin: string;
  modelsDir: string;
  quant: SyntheticQuant;
  /** Fewer runs and tokens. */
  quick: boolean;
  log: (line: string) => void;
}

/** The shapes compared: the small model the other scenarios use and the default model's. */
const PEER_SHAPES: { name: SyntheticShapeName; decodeTokens: number; quickDecodeTokens: number }[] = [
  { name: "smollm2-135m", decodeTokens: 200, quickDecodeTokens: 48 },
  { name: "qwen2.5-1.5b", decodeTokens: 64, quickDecodeTokens: 16 },
];
const CONTEXT = 4096;
const FOLLOW_UP_HISTORY_TOKENS = 1500;

/** What both servers speak: Chat Completions over SSE, and a one-token round trip. */
interface Side {
  name: "spark" | "llama-server";
  baseUrl: string;
  roundTrip: () => Promise<number>;
}

/**
 * Spark against plain llama.cpp `llama-server` on the same GGUF, threads and context, one
 * conversation at a time: decode tokens/s and follow-up time to first token over streamed Chat
 * Completions (greedy), and the one-token round trip each is used with (Spark's WebSocket,
 * llama-server's keep-alive HTTP). Both servers run as child processes; requests alternate A B, B A,
 * and each is measured while the other is idle.
 */
export async function peerScenario(options: PeerOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const threads = physicalCoreCount();
  for (const shape of PEER_SHAPES) {
    options.log(`peer: building synthetic ${shape.name} ${options.quant}`);
    const modelPath = await ensureSyntheticModel(options.modelsDir, shape.name, options.quant);
    await using spark = await ServerProcess.start([
      ...[
        "--model",
        modelPath,
        "--ctx-size",
        String(CONTEXT),
        "--parallel",
        "1",
        "--threads",
        String(threads),
      ],
    ]);
    await using peer = await PeerServer.start({
      binary: options.peerBin,
      modelPath,
      contextSize: CONTEXT,
      threads,
    });
    await using socket = await BenchSocket.open(`${spark.baseUrl.replace(/^http/, "ws")}/responses`);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    using _agent = { [Symbol.dispose]: () => agent.destroy() };
    const sides: Side[] = [
      {
        name: "spark",
        baseUrl: spark.baseUrl,
        roundTrip: async () => {
          const sent = socket.send({
            type: "response.create",
            input: "ping",
            max_output_tokens: 1,
            store: false,
          });
          return (await socket.untilDone()).at(-1)!.at - sent;
        },
      },
      {
        name: "llama-server",
        baseUrl: peer.baseUrl,
        roundTrip: () =>
          timedPost(
            `${peer.baseUrl}/chat/completions`,
            JSON.stringify({ messages: [{ role: "user", content: "ping" }], max_tokens: 1, temperature: 0 }),
            { agent },
          ),
      },
    ];
    rows.push(
      ...(await compareShape(
        shape.name,
        sides,
        options.quick ? shape.quickDecodeTokens : shape.decodeTokens,
        options,
      )),
    );
  }
  return rows;
}

async function compareShape(
  shape: string,
  sides: Side[],
  decodeTokens: number,
  options: PeerOptions,
): Promise<BenchRow[]> {
  const runs = options.quick ? 2 : 5;
  const rttRuns = options.quick ? 20 : 100;
  const decode = { spark: [] as number[], "llama-server": [] as number[] };
  const followUp = { spark: [] as number[], "llama-server": [] as number[] };
  const rtt = { spark: [] as number[], "llama-server": [] as number[] };
  const prompt = [
    { role: "user", content: "Write a TypeScript module that parses CSV files, then explain it." },
  ];
  // Warm-up: the first request of each pays for allocations and caches; not measured.
  for (const side of sides) await streamMessages(side.baseUrl, prompt, 4);
  for (let i = 0; i < runs; i++) {
    for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
      const stream = await streamMessages(side.baseUrl, prompt, decodeTokens);
      decode[side.name].push(((stream.tokens - 1) * 1000) / (stream.lastAt - stream.firstAt));
      followUp[side.name].push(await followUpTtft(side.baseUrl));
    }
    options.log(
      `peer ${shape} run ${i + 1}/${runs}: decode ${decode.spark.at(-1)!.toFixed(1)} vs ${decode["llama-server"].at(-1)!.toFixed(1)} tok/s, follow-up TTFT ${followUp.spark.at(-1)!.toFixed(0)} vs ${followUp["llama-server"].at(-1)!.toFixed(0)} ms`,
    );
  }
  for (let i = 0; i < rttRuns; i++) {
    for (const side of i % 2 === 0 ? sides : [...sides].reverse())
      rtt[side.name].push(await side.roundTrip());
  }
  const vs = "Spark vs llama-server, same GGUF and threads";
  return [
    row(
      {
        scenario: "peer",
        metric: `decode tokens/s, ${shape}: ${vs} (streamed Chat Completions, greedy)`,
        value: median(decode.spark),
        baseline: median(decode["llama-server"]),
        unit: "tok/s",
        target: ">= 1.0x",
        detail: `${decodeTokens} output tokens, first to last token, median of ${runs}`,
      },
      (ratio) => ratio >= 1,
    ),
    row(
      {
        scenario: "peer",
        metric: `follow-up time to first token on a ${FOLLOW_UP_HISTORY_TOKENS}-token conversation, ${shape}: ${vs}`,
        value: median(followUp.spark),
        baseline: median(followUp["llama-server"]),
        unit: "ms",
        target: "<= 1.0x",
        detail: `conversation evaluated once, then resent with one more question (both reuse the cached prefix), median of ${runs}`,
      },
      (ratio) => ratio <= 1,
    ),
    infoRow({
      scenario: "peer",
      metric: `one-token round trip, ${shape}: Spark over its WebSocket vs llama-server over keep-alive HTTP`,
      value: median(rtt.spark),
      baseline: median(rtt["llama-server"]),
      unit: "ms",
      detail: `${rttRuns} requests each, client-side`,
    }),
  ];
}

type Message = { role: string; content: string };

/** Time to the first content token of a follow-up question on a conversation already evaluated. */
async function followUpTtft(baseUrl: string): Promise<number> {
  const conversation: Message[] = history(randomUUID(), FOLLOW_UP_HISTORY_TOKENS).map((item) => ({
    role: item.role === "developer" ? "system" : item.role,
    content: item.content,
  }));
  const first = await streamMessages(baseUrl, conversation, 1);
  const followUp = [
    ...conversation,
    { role: "assistant", content: first.text },
    { role: "user", content: "Now rename step3 to scale and update callers." },
  ];
  const measured = await streamMessages(baseUrl, followUp, 1);
  return measured.firstAt - measured.sentAt;
}

/** A streamed, greedy Chat Completion of `messages`. */
function streamMessages(baseUrl: string, messages: Message[], maxTokens: number): Promise<Streamed> {
  return streamChat(baseUrl, { messages, max_tokens: maxTokens, temperature: 0 });
}
