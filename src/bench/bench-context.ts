import type { LlamaEngine } from "../engine/llama/llama-engine.js";

/** What every scenario gets: one engine, served on loopback, and how long to spend. */
export interface BenchContext {
  engine: LlamaEngine;
  /** `ws://127.0.0.1:PORT/v1/responses` of a server running `engine`. */
  wsUrl: string;
  /** `http://127.0.0.1:PORT/v1` of the same server. */
  baseUrl: string;
  /** Fewer repetitions, for `--quick` and tests. */
  quick: boolean;
  /** Size of the conversation the TTFT scenario follows up on. Default in `spark bench`: 2000. */
  historyTokens: number;
  log: (line: string) => void;
}
