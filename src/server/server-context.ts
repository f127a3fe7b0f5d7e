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
}

/** Appends the transport's sequence number to an event without copying the object. */
export function withSequence(event: object, sequence: number): string {
  const json = JSON.stringify(event);
  return `${json.slice(0, -1)},"sequence_number":${sequence}}`;
}
