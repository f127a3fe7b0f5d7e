import type {
  DraftOptions,
  DraftRequest,
  DraftResult,
  Engine,
  EngineEvent,
  EngineInfo,
  GenerateOptions,
  GenerateRequest,
  GenerateResult,
} from "../../engine/engine.js";
import { SparkError } from "../../protocol/errors.js";
import type { RequestRecord } from "./request-log.js";
import type { ServerMetrics, ServingLabels } from "./server-metrics.js";

export interface MeteredEngineOptions {
  metrics: ServerMetrics;
  labels: ServingLabels;
  /** Filled with the result or the error. Default: none. */
  record?: RequestRecord;
  /** Told each finished result (e.g. to charge its tokens to a rate limit). Default: none. */
  onResult?: (result: GenerateResult) => void;
}

/**
 * An engine seen through the server's meters: each generation counts as an active stream while
 * it runs, and its result (TTFT, speed, tokens, outcome) or error lands in the metrics and the
 * request's log record. Events pass through unchanged; breaking out still cancels the inner one.
 */
export class MeteredEngine implements Engine {
  constructor(
    private readonly inner: Engine,
    private readonly options: MeteredEngineOptions,
  ) {}

  get info(): EngineInfo {
    return this.inner.info;
  }

  async *generate(request: GenerateRequest, options?: GenerateOptions): AsyncGenerator<EngineEvent> {
    const { metrics, labels, record, onResult } = this.options;
    metrics.streamStarted(labels);
    try {
      for await (const event of this.inner.generate(request, options)) {
        if (event.type === "done") {
          metrics.finished(labels, event.result);
          record?.result(event.result);
          onResult?.(event.result);
        }
        yield event;
      }
    } catch (error) {
      const spark = SparkError.from(error);
      metrics.failed(labels, spark.code);
      record?.fail(spark);
      throw error;
    } finally {
      metrics.streamEnded(labels);
    }
  }

  /** Drafts are not generations: they pass through unmetered. */
  draft(request: DraftRequest, options?: DraftOptions): Promise<DraftResult> {
    return this.inner.draft(request, options);
  }

  /** The registry owns the engine: disposing a view of it does nothing. */
  async dispose(): Promise<void> {}

  async [Symbol.asyncDispose](): Promise<void> {}
}
