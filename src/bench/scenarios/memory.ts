import { readFile } from "node:fs/promises";
import { setTimeout } from "node:timers/promises";
import { type BenchRow, row } from "../bench-report.js";
import { streamChat } from "../internal/chat-stream.js";
import { PeerServer } from "../internal/peer-server.js";
import { ServerProcess } from "../internal/server-process.js";

export interface MemoryOptions {
  /** The `llama-server` binary to compare with. */
  peerBin: string;
  /** The GGUF both serve (the default model's 1.5B shape). */
  modelPath: string;
  label: string;
  /** A row for each: the context both are started with. */
  contextSizes: number[];
  threads: number;
  log: (line: string) => void;
}

/** Resident memory of a process from `/proc/<pid>/status`, in MiB: all, anonymous and file-backed. */
export interface Resident {
  rss: number;
  anon: number;
  file: number;
}

/**
 * Seconds each server sits idle after its answer before it is measured: Spark gives back what it
 * no longer uses after 2 s without a request (LlamaEngineOptions.releaseMemoryAfterIdleMs);
 * llama-server holds what it holds. What `top` shows once a reply is read, for both.
 */
const SETTLE_MS = 3000;

/**
 * Resident memory after one answer: `spark serve` with its defaults (its `--parallel`) against
 * llama-server with its own (its automatic slots over one unified KV cache), same GGUF, context
 * and threads. Each server is started alone, answers one question, sits idle for the same
 * {@link SETTLE_MS}, and is measured and stopped before the other starts.
 */
export async function memoryScenario(options: MemoryOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const contextSize of options.contextSizes) rows.push(await memoryRow(options, contextSize));
  return rows;
}

async function memoryRow(options: MemoryOptions, contextSize: number): Promise<BenchRow> {
  const threads = String(options.threads);
  let spark: Resident;
  {
    await using server = await ServerProcess.start([
      "--model",
      options.modelPath,
      "--ctx-size",
      String(contextSize),
      "--threads",
      threads,
    ]);
    await answerOnce(server.baseUrl);
    spark = await residentOf(server.pid);
  }
  options.log(`memory ${options.label}, ctx ${contextSize}: spark ${describe(spark)}`);
  let peer: Resident;
  {
    await using server = await PeerServer.start({
      binary: options.peerBin,
      modelPath: options.modelPath,
      contextSize,
      threads: options.threads,
      parallel: -1,
    });
    await answerOnce(server.baseUrl);
    peer = await residentOf(server.pid);
  }
  options.log(`memory ${options.label}, ctx ${contextSize}: llama-server ${describe(peer)}`);
  return row(
    {
      scenario: "memory",
      metric: `resident memory after one answer and ${SETTLE_MS / 1000} s idle, ${options.label}, ctx ${contextSize}: spark serve vs llama-server, both with their default slots`,
      value: spark.rss,
      baseline: peer.rss,
      unit: "MiB",
      target: "<= 1.05x",
      detail: `Spark ${describe(spark)}; llama-server ${describe(peer)}; ${options.threads} threads`,
    },
    (ratio) => ratio <= 1.05,
  );
}

async function answerOnce(baseUrl: string): Promise<void> {
  await streamChat(baseUrl, {
    messages: [{ role: "user", content: "Write a TypeScript function that parses CSV lines." }],
    max_tokens: 16,
    temperature: 0,
  });
  await setTimeout(SETTLE_MS);
}

/** The process's resident memory now; throws where there is no /proc. */
export async function residentOf(pid: number): Promise<Resident> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS") / 1024, anon: kib("RssAnon") / 1024, file: kib("RssFile") / 1024 };
}

function describe(resident: Resident): string {
  return `${resident.rss.toFixed(0)} MiB resident (${resident.anon.toFixed(0)} anonymous, ${resident.file.toFixed(0)} file-backed)`;
}
