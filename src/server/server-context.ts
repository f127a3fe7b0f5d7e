import type { IncomingMessage } from "node:http";
import type { JsonLimits } from "../protocol/json-guard.js";
import type { Scheduler } from "./admission/scheduler.js";
import type { BodyLimits } from "./internal/http-io.js";
import type { RecentIds } from "./internal/recent-ids.js";
import type { RequestLog } from "./metrics/request-log.js";
import type { ServerMetrics } from "./metrics/server-metrics.js";
import type { ModelRegistry } from "./model-registry.js";
import type {
  ResponseSettings,
  ResponseStore,
  ResponseStoreOptions,
  StoredResponse,
} from "./response-store.js";

/** What every route and socket handler shares. */
export interface ServerContext {
  models: ModelRegistry;
  /** Responses kept for `previous_response_id`: in memory, or shared with other servers (Redis). */
  store: ResponseStore;
  /** Responses this server ran (its engine may hold their state); a chain from elsewhere is recomputed. */
  ranHere: RecentIds;
  /** Bounds of each WebSocket connection's own cache of its recent responses. */
  connectionCache: ResponseStoreOptions;
  body: BodyLimits;
  json: JsonLimits;
  /**
   * HTTP responses still running, by id. A client that aborts a stream and at once continues from
   * it (`previous_response_id`) must find the partial response, so such a lookup waits for it.
   */
  running: Map<string, Promise<unknown>>;
  /** Admission control: every generation enters here (queues, rate limits, meters). */
  scheduler: Scheduler;
  metrics: ServerMetrics;
  log: RequestLog;
  /** The rate-limit and fairness key of a request (see `requestKey`). */
  keyOf: (req: IncomingMessage) => string;
}

/** Appends the transport's sequence number to an event without copying the object. */
export function withSequence(event: object, sequence: number): string {
  const json = JSON.stringify(event);
  return `${json.slice(0, -1)},"sequence_number":${sequence}}`;
}

/**
 * A finished response: this server ran it, and with `store` the store keeps it. Throws
 * `store_unavailable` when the store cannot take it (the caller fails the response).
 */
export async function keepResponse(
  ctx: ServerContext,
  settings: ResponseSettings,
  stored: StoredResponse,
): Promise<void> {
  ctx.ranHere.add(stored.id);
  if (settings.store) await ctx.store.put(stored);
}
