import type { ServerResponse } from "node:http";
import { SparkError } from "../protocol/errors.js";
import { requestKey } from "./admission/request-key.js";
import { type AdmissionConfig, DEFAULT_TIER, Scheduler } from "./admission/scheduler.js";
import { RequestLog, type RequestLogOptions, type RequestRecord } from "./metrics/request-log.js";
import { ServerMetrics } from "./metrics/server-metrics.js";
import type { ServerContext } from "./server-context.js";

export interface ServingPartsOptions {
  apiKeys?: string[];
  admission?: AdmissionConfig;
  log?: RequestLogOptions;
}

/** The server context's admission, metrics and logging parts, built from the server's options. */
export function servingParts(
  options: ServingPartsOptions,
): Pick<ServerContext, "scheduler" | "metrics" | "log" | "keyOf"> {
  const metrics = new ServerMetrics();
  const authenticated = (options.apiKeys ?? []).length > 0;
  return {
    metrics,
    scheduler: new Scheduler(options.admission ?? {}, metrics),
    log: new RequestLog(options.log),
    keyOf: (req) => requestKey(req, authenticated),
  };
}

/** `GET /metrics`: the Prometheus text exposition. */
export function sendMetrics(res: ServerResponse, metrics: ServerMetrics): void {
  const text = metrics.render();
  res.writeHead(200, {
    "content-type": "text/plain; version=0.0.4; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * Counts an HTTP error in `spark_errors_total` unless admission or the engine already did (they
 * set the record's model when the request reached them). A request refused before it reached a
 * model (bad input, authentication, unknown model) has an empty `model` label.
 */
export function countRefusal(metrics: ServerMetrics, record: RequestRecord, error: unknown): void {
  const spark = SparkError.from(error);
  record.fail(spark);
  if (record.fields.model !== undefined) return;
  metrics.refused({ model: "", tier: DEFAULT_TIER }, spark.code);
}
