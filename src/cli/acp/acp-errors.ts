import { RequestError } from "@agentclientprotocol/sdk";
import { HostClientError } from "../../client-core/host-client.js";
import { SparkError, type SparkErrorCode, type WireError } from "../../protocol/errors.js";

/** ACP's "Resource not found" (an unknown session). */
export const RESOURCE_NOT_FOUND = -32002;

/**
 * Any failure as the JSON-RPC error the client gets: a request Spark refused as invalid is
 * `-32602` (invalid params), something missing `-32002`, a request the thread's state refuses (a
 * turn already running) `-32600`, the rest `-32603`; the message is
 * Spark's own and `data.code` its error code.
 */
export function asRequestError(error: unknown): RequestError {
  if (error instanceof RequestError) return error;
  const wire = wireOf(error);
  if (wire) return new RequestError(jsonRpcCode(wire.code), wire.message, { code: wire.code });
  return RequestError.internalError(undefined, error instanceof Error ? error.message : String(error));
}

function wireOf(error: unknown): Pick<WireError, "code" | "message"> | null {
  if (error instanceof HostClientError && error.wire) return error.wire;
  if (error instanceof SparkError) return { code: error.code, message: error.message };
  // A host's WireError as it arrives in an event (a failed turn's `error`).
  if (
    typeof error === "object" &&
    error !== null &&
    !(error instanceof Error) &&
    "code" in error &&
    "message" in error
  ) {
    const { code, message } = error as { code: unknown; message: unknown };
    if (typeof code === "string" && typeof message === "string")
      return { code: code as SparkErrorCode, message };
  }
  return null;
}

function jsonRpcCode(code: SparkErrorCode): number {
  switch (code) {
    case "invalid_request":
    case "invalid_event":
    case "unsupported_parameter":
    case "payload_too_large":
      return -32602;
    case "not_found":
      return RESOURCE_NOT_FOUND;
    case "response_in_progress":
      return -32600;
    default:
      return -32603;
  }
}
