import type { HostEvent } from "../protocol/agent.js";
import { requestIdSchema } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";

/**
 * The `error` event answering a request (named by its `request_id` when it had a valid one), with
 * the error's HTTP `status` (409 for a rewind or undo the person's changes refuse, 429 at a limit...).
 */
export function errorEvent(error: unknown, requestId: string | undefined): string {
  const spark = SparkError.from(error);
  return JSON.stringify({
    type: "error",
    status: spark.status,
    error: spark.toWire(),
    ...(requestId === undefined ? {} : { request_id: requestId }),
  } satisfies HostEvent);
}

/** The request's `request_id` when it is a valid one (an invalid id is never echoed). */
export function requestIdOf(raw: unknown): string | undefined {
  const id = (raw as { request_id?: unknown } | null)?.request_id;
  return requestIdSchema.safeParse(id).success ? (id as string) : undefined;
}
