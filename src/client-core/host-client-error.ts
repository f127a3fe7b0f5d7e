import type { WireError } from "../protocol/errors.js";

export type HostClientErrorCode =
  | "not_connected"
  | "connect_failed"
  | "disconnected"
  | "timeout"
  | "host_error";

/**
 * A failure of the client itself, or a host `error` answering a request (`code: "host_error"`,
 * `wire`, and `status`: the HTTP status the host gave it, e.g. 409 for a refused rewind).
 */
export class HostClientError extends Error {
  constructor(
    readonly code: HostClientErrorCode,
    message: string,
    readonly wire?: WireError,
    readonly status?: number,
  ) {
    super(message);
    this.name = "HostClientError";
  }
}
