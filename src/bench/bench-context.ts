import type { LlamaEngine } from "../engine/llama/llama-engine.js";
import type { LlamaServerLookup } from "./internal/llama-server-binary.js";

/** How much each scenario does; `spark bench` uses {@link benchSizes}, tests shrink them. */
export interface BenchSizes {
  /** rtt: requests per transport. Default: 200, quick 50. */
  rttIterations: number;
  /**
   * per-token: tokens in the streamed reply. Default: 100,000, quick 50,000: a few microseconds of
   * server CPU each, so a stream must be long to span enough 10 ms clock ticks of /proc's CPU time.
   * (The scripted engine overflows the stack on a message of much more than 100,000 words.)
   */
  perTokenTokens: number;
  /** per-token: streams per transport (the median is reported). Default: 3, quick 2. */
  perTokenRuns: number;
  /** spec: lines of the file the model is asked to rewrite. Default: 300, quick 150. */
  specFileLines: number;
  /** spec: output tokens per generation. Default: 600, quick 200. */
  specOutputTokens: number;
  /** batch: concurrent stream counts, ascending, starting at 1. Default: 1, 2, 4, 8. */
  batchStreams: number[];
  /** batch: times each count runs on each side (the median is reported). Default: 5, quick 3. */
  batchRounds: number;
  /** decode: buffer copied to measure memory bandwidth. Default: 256 MiB. */
  bandwidthBytes: number;
  /** load: concurrent WebSocket conversations. Default: 64. */
  loadConnections: number;
}

export function benchSizes(quick: boolean): BenchSizes {
  return {
    rttIterations: quick ? 50 : 200,
    perTokenTokens: quick ? 50_000 : 100_000,
    perTokenRuns: quick ? 2 : 3,
    specFileLines: quick ? 150 : 300,
    specOutputTokens: quick ? 200 : 600,
    batchStreams: [1, 2, 4, 8],
    batchRounds: quick ? 3 : 5,
    bandwidthBytes: 256 * 1024 * 1024,
    loadConnections: 64,
  };
}

/** A model the batch scenario measures concurrent streams on. */
export interface BatchModel {
  /** How rows name it, e.g. "135M shape". */
  label: string;
  path: string;
  /** Output tokens per stream. */
  outputTokens: number;
}

/** What every scenario gets: one engine, served on loopback, and how long to spend. */
export interface BenchContext {
  engine: LlamaEngine;
  /** The GGUF file `engine` runs: its size bounds decode speed; the batch scenario loads it again. */
  modelPath: string;
  /** `ws://127.0.0.1:PORT/v1/responses` of a server running `engine`. */
  wsUrl: string;
  /** `http://127.0.0.1:PORT/v1` of the same server. */
  baseUrl: string;
  /** Fewer repetitions, for `--quick` and tests. */
  quick: boolean;
  /** Size of the conversation the TTFT scenario follows up on. Default in `spark bench`: 2000. */
  historyTokens: number;
  sizes: BenchSizes;
  /** batch: the models it runs on (`spark bench`: the 135M and 1.5B synthetic shapes). */
  batchModels: BatchModel[];
  /** batch: llama-server for the `--parallel` baseline; without one those rows are left out (and logged). */
  llamaServer: LlamaServerLookup;
  /**
   * A small trained model (e.g. `../shared/models/stories260K.gguf`) for an extra Predicted Outputs
   * check; random weights write token sequences a text prediction cannot always reproduce.
   * Default: none (the check is left out).
   */
  trainedModelPath?: string;
  /** A trained chat model (SmolLM2-135M-Instruct once `npm run fetch:smollm2` fetched it) for the same check. */
  chatModelPath?: string;
  log: (line: string) => void;
}
