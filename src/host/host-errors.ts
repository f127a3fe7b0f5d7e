import type { HostEvent } from "../protocol/agent.js";
import { requestIdSchema } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";

/** The `error` event answering a request (named by its `request_id` when it had a valid one). */
export function errorEvent(error: unknown, requestId: string | undefined): string {
  return JSON.stringify({
    type: "error",
    error: SparkError.from(error).toWire(),
    ...(requestId === undefined ? {} : { request_id: requestId }),
  } satisfies HostEvent);
}

/** The request's `request_id` when it is a valid one (an invalid id is never echoed). */
export function requestIdOf(raw: unknown): string | undefined {
  const id = (raw as { request_id?: unknown } | null)?.request_id;
  return requestIdSchema.safeParse(id).success ? (id as string) : undefined;
}
