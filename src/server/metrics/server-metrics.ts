import { type GenerateResult, tokensPerSecond } from "../../engine/engine.js";
import type { SparkErrorCode } from "../../protocol/errors.js";
import { MetricRegistry } from "./metric-registry.js";

/** Which model and tier a request ran on: the labels of every per-request series. */
// A type, not an interface: it must fit the registry's string-indexed label sets.
export type ServingLabels = {
  model: string;
  tier: string;
};

/** How a request ended: an engine stop reason, `failed` (the engine threw) or `rejected` (admission). */
export type RequestOutcome = GenerateResult["stopReason"] | "failed" | "rejected";

const LABELS = ["model", "tier"] as const;

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const QUEUE_BUCKETS = [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];
const RATE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

/**
 * Spark's series, per model and tier: time to first token, decode speed, queue wait and depth,
 * active streams, tokens (input, cached, output, accepted/rejected prediction), requests by
 * outcome and errors by code. `GET /metrics` renders them.
 */
export class ServerMetrics {
  readonly registry = new MetricRegistry();
  private readonly requests = this.registry.counter(
    "spark_requests_total",
    "Requests by how they ended: stop, length, tool_calls, cancelled, failed or rejected.",
    [...LABELS, "outcome"],
  );
  private readonly errors = this.registry.counter(
    "spark_errors_total",
    "Errors by code (admission rejections, engine failures, refused requests).",
    [...LABELS, "code"],
  );
  private readonly ttft = this.registry.histogram(
    "spark_time_to_first_token_seconds",
    "From the engine call to the first output token (queue wait excluded).",
    LABELS,
    LATENCY_BUCKETS,
  );
  private readonly speed = this.registry.histogram(
    "spark_tokens_per_second",
    "Decode speed of a response after its first token.",
    LABELS,
    RATE_BUCKETS,
  );
  private readonly queueWait = this.registry.histogram(
    "spark_queue_wait_seconds",
    "Time a request waited for admission.",
    LABELS,
    QUEUE_BUCKETS,
  );
  readonly queueDepth = this.registry.gauge(
    "spark_queue_depth",
    "Requests waiting for admission now.",
    LABELS,
  );
  private readonly active = this.registry.gauge(
    "spark_active_streams",
    "Generations running on an engine now.",
    LABELS,
  );
  private readonly inputTokens = this.registry.counter(
    "spark_input_tokens_total",
    "Input tokens of finished generations, cached ones included.",
    LABELS,
  );
  private readonly cachedTokens = this.registry.counter(
    "spark_cached_input_tokens_total",
    "Input tokens whose KV state was reused.",
    LABELS,
  );
  private readonly outputTokens = this.registry.counter(
    "spark_output_tokens_total",
    "Output tokens generated.",
    LABELS,
  );
  private readonly prediction = this.registry.counter(
    "spark_prediction_tokens_total",
    "Draft tokens (Predicted Outputs, prompt lookup) accepted or rejected.",
    [...LABELS, "result"],
  );

  streamStarted(labels: ServingLabels): void {
    this.active.inc(labels);
  }

  streamEnded(labels: ServingLabels): void {
    this.active.dec(labels);
  }

  /** A generation finished (including a cancelled one). */
  finished(labels: ServingLabels, result: GenerateResult): void {
    const { usage, timing } = result;
    this.requests.inc({ ...labels, outcome: result.stopReason });
    if (usage.outputTokens > 0) this.ttft.observe(labels, timing.firstTokenMs / 1000);
    const speed = tokensPerSecond(result);
    if (speed > 0) this.speed.observe(labels, speed);
    this.inputTokens.inc(labels, usage.inputTokens);
    this.cachedTokens.inc(labels, usage.cachedInputTokens);
    this.outputTokens.inc(labels, usage.outputTokens);
    this.prediction.inc({ ...labels, result: "accepted" }, usage.acceptedPredictionTokens);
    this.prediction.inc({ ...labels, result: "rejected" }, usage.rejectedPredictionTokens);
  }

  /** A generation threw. */
  failed(labels: ServingLabels, code: SparkErrorCode): void {
    this.requests.inc({ ...labels, outcome: "failed" });
    this.errors.inc({ ...labels, code });
  }

  /** Admission refused a request or gave up on it (rate limit, full queue, deadline). */
  rejected(labels: ServingLabels, code: SparkErrorCode): void {
    this.requests.inc({ ...labels, outcome: "rejected" });
    this.errors.inc({ ...labels, code });
  }

  /** A request refused before it reached a model (bad input, auth, unknown route). */
  refused(labels: ServingLabels, code: SparkErrorCode): void {
    this.errors.inc({ ...labels, code });
  }

  queued(labels: ServingLabels, waitedMs: number): void {
    this.queueWait.observe(labels, waitedMs / 1000);
  }

  /** The exposition for `GET /metrics`. */
  render(): string {
    return this.registry.render();
  }
}
