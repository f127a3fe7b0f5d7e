import { CodedError, type SparkErrorCode, type WireError } from "../protocol/errors.js";
import type { ResponseObject } from "../protocol/responses.js";

/**
 * Codes the client itself raises, besides the wire codes a server sends:
 * - `connection_lost`: the socket or the SSE body ended mid-response.
 * - `connection_failed`: the request never reached a server (refused, DNS, TLS).
 * - `protocol_error`: the server broke the protocol (bad JSON, a sequence gap or repeat).
 * - `http_error`: a non-2xx answer without an OpenAI-style error body.
 * - `cancelled`: the stream was cancelled before the server had created a response.
 * - `client_closed`: the client was closed while the stream ran.
 */
export type ClientOwnErrorCode =
  | "connection_lost"
  | "connection_failed"
  | "protocol_error"
  | "http_error"
  | "cancelled"
  | "client_closed";

/** Spark's wire codes, the client's own, and whatever another server sends (kept as is). */
export type ClientErrorCode = SparkErrorCode | ClientOwnErrorCode | (string & {});

export interface ClientErrorOptions {
  /** HTTP status, or the `status` of a WebSocket `error` event. Default: null. */
  status?: number | null;
  /** The request field at fault, from the wire error. Default: null. */
  param?: string | null;
  /** The failed response, when the error came from `response.failed`. Default: null. */
  response?: ResponseObject | null;
  cause?: unknown;
}

/** Every failure the Responses client reports. Branch on `code`, never on the message. */
export class ClientError extends CodedError<ClientErrorCode> {
  readonly status: number | null;
  readonly param: string | null;
  readonly response: ResponseObject | null;

  constructor(code: ClientErrorCode, message: string, options: ClientErrorOptions = {}) {
    super(code, message, options);
    this.name = "ClientError";
    this.status = options.status ?? null;
    this.param = options.param ?? null;
    this.response = options.response ?? null;
  }

  /** From an OpenAI-style `{code, message, param}` object; tolerant of servers that omit fields. */
  static fromWire(
    error: Partial<WireError> | null | undefined,
    options: ClientErrorOptions = {},
  ): ClientError {
    const code = typeof error?.code === "string" && error.code ? error.code : "server_error";
    const message = typeof error?.message === "string" ? error.message : "The server reported an error.";
    const param = typeof error?.param === "string" ? error.param : null;
    return new ClientError(code, message, { param, ...options });
  }
}
