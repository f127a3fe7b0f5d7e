import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { ToolError } from "../tool-error.js";
import type {
  SearchWorkerData,
  SearchWorkerMatch,
  SearchWorkerReply,
  SearchWorkerRequest,
} from "./search-worker.js";

export type { SearchWorkerMatch as LineMatch } from "./search-worker.js";

/** The worker beside this module: search-worker.js in dist/, search-worker.ts under the tests. */
const WORKER_URL = new URL(`./search-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export interface PatternMatcherOptions {
  pattern: string;
  /** RE2 syntax when true; plain text otherwise. */
  regex: boolean;
  /** Characters of a matching line returned; longer lines are cut around the match. */
  maxLineChars: number;
  /** Ends the worker at once, mid-match too; pending and later calls reject with its reason. */
  signal: AbortSignal;
}

/**
 * Finds the lines of a text that match a pattern, on a worker thread of its own: whatever the
 * pattern and text, the caller's event loop stays free, and an abort stops the work where it is.
 */
export class PatternMatcher implements AsyncDisposable {
  /** Settles once the worker thread has ended. */
  readonly exited: Promise<void>;
  private disposed = false;

  private constructor(
    private readonly worker: Worker,
    private readonly signal: AbortSignal,
  ) {
    this.exited = new Promise((resolve) => worker.once("exit", () => resolve()));
  }

  /**
   * Starts the worker and compiles the pattern there. Throws a ToolError `invalid_arguments` for
   * a regular expression RE2 does not accept, and the signal's reason once it aborts.
   */
  static async start(options: PatternMatcherOptions): Promise<PatternMatcher> {
    options.signal.throwIfAborted();
    const workerData: SearchWorkerData = {
      pattern: options.pattern,
      regex: options.regex,
      maxLineChars: options.maxLineChars,
    };
    const matcher = new PatternMatcher(new Worker(WORKER_URL, { workerData }), options.signal);
    try {
      const first = await matcher.next();
      if (first.type === "invalid") throw invalidPattern(options.pattern, first.message);
      return matcher;
    } catch (error) {
      await matcher.dispose();
      throw error;
    }
  }

  /** The lines of `text` that match, at most `limit`, in order. */
  async match(text: string, limit: number): Promise<SearchWorkerMatch[]> {
    const reply = this.next();
    const request: SearchWorkerRequest = { text, limit };
    this.worker.postMessage(request);
    const answer = await reply;
    if (answer.type !== "matches") throw new Error(`Unexpected reply from the search worker: ${answer.type}`);
    return answer.matches;
  }

  /** Ends the worker, mid-match or not. Idempotent. */
  async dispose(): Promise<void> {
    if (!this.disposed) {
      this.disposed = true;
      await this.worker.terminate();
    }
    await this.exited;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }

  /** The worker's next message; rejects when the signal aborts or the worker fails or exits. */
  private next(): Promise<SearchWorkerReply> {
    const { worker, signal } = this;
    return new Promise((resolve, reject) => {
      const settle = () => {
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        signal.removeEventListener("abort", onAbort);
      };
      const onMessage = (message: SearchWorkerReply) => {
        settle();
        resolve(message);
      };
      const onError = (error: Error) => {
        settle();
        reject(error);
      };
      const onExit = (code: number) => {
        settle();
        reject(new Error(`The search worker exited (code ${code}).`));
      };
      const onAbort = () => {
        settle();
        // Abort first: the worker may be deep in a match that never yields.
        void this.dispose();
        reject(signal.reason);
      };
      if (signal.aborted) return onAbort();
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function invalidPattern(pattern: string, message: string): ToolError {
  return new ToolError(
    "invalid_arguments",
    `Invalid regular expression ${JSON.stringify(pattern)}: ${message}. The pattern is RE2 syntax, ` +
      "which has no backreferences (\\1) and no lookaround ((?=, (?!, (?<=, (?<!); write \\x{41} " +
      "rather than \\u0041. Simplify the pattern, or pass regex: false to search for the literal text.",
  );
}
