import type { JsonLimits } from "../protocol/json-guard.js";
import type { BodyLimits } from "./internal/http-io.js";
import type { ModelRegistry } from "./model-registry.js";
import type { ResponseStore } from "./response-store.js";

/** What every route and socket handler shares. */
export interface ServerContext {
  models: ModelRegistry;
  store: ResponseStore;
  body: BodyLimits;
  json: JsonLimits;
  /**
   * HTTP responses still running, by id. A client that aborts a stream and at once continues from
   * it (`previous_response_id`) must find the partial response, so such a lookup waits for it.
   */
  running: Map<string, Promise<unknown>>;
}

/** Appends the transport's sequence number to an event without copying the object. */
export function withSequence(event: object, sequence: number): string {
  const json = JSON.stringify(event);
  return `${json.slice(0, -1)},"sequence_number":${sequence}}`;
}
