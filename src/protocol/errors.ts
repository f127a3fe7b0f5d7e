/**
 * Every error Spark puts on the wire. The `code` is a closed union so callers branch on it, never on
 * message text; `status` is the HTTP status the error maps to; `param` names the offending field.
 * Errors become wire objects in exactly one place: {@link SparkError.toWire}.
 */
export type SparkErrorCode =
  | "invalid_json"
  | "invalid_request"
  | "invalid_event"
  | "unknown_event_type"
  | "unsupported_parameter"
  | "payload_too_large"
  | "unsupported_media_type"
  | "request_timeout"
  | "unauthorized"
  | "forbidden_origin"
  | "not_found"
  | "method_not_allowed"
  | "previous_response_not_found"
  | "response_in_progress"
  | "response_not_active"
  | "response_already_completed"
  | "model_not_found"
  | "model_not_loaded"
  | "model_unavailable"
  | "download_failed"
  | "checksum_mismatch"
  | "context_length_exceeded"
  | "cancelled"
  | "rate_limited"
  | "queue_full"
  | "queue_timeout"
  | "upstream_unavailable"
  | "upstream_error"
  | "upstream_disconnected"
  | "upstream_timeout"
  | "limit_reached"
  | "server_busy"
  | "websocket_connection_limit_reached"
  | "store_unavailable"
  | "server_error";

export type SparkErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "rate_limit_error"
  | "server_error";

export interface SparkErrorOptions {
  /** The request field at fault, as a dotted path (`input[2].content`). Default: null. */
  param?: string | null;
  /** HTTP status. Default: derived from the code. */
  status?: number;
  /** Seconds after which a retry may succeed; sent as the `Retry-After` header. Default: none. */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/** The OpenAI-style error object: `{type, code, message, param}`. */
export interface WireError {
  type: SparkErrorType;
  code: SparkErrorCode;
  message: string;
  param: string | null;
  /** Whole seconds after which a retry may succeed (what `Retry-After` says over HTTP). Default: absent. */
  retry_after_seconds?: number;
}

const STATUS: Record<SparkErrorCode, number> = {
  invalid_json: 400,
  invalid_request: 400,
  invalid_event: 400,
  unknown_event_type: 400,
  unsupported_parameter: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  request_timeout: 408,
  unauthorized: 401,
  forbidden_origin: 403,
  not_found: 404,
  method_not_allowed: 405,
  previous_response_not_found: 400,
  response_in_progress: 409,
  response_not_active: 400,
  response_already_completed: 400,
  model_not_found: 404,
  model_not_loaded: 503,
  model_unavailable: 503,
  download_failed: 502,
  checksum_mismatch: 502,
  context_length_exceeded: 400,
  cancelled: 499,
  // The key's request or token budget is spent: the client should slow down.
  rate_limited: 429,
  // Too many requests already wait: retrying later (Retry-After) is the remedy, as for 429.
  queue_full: 429,
  // The request waited its whole deadline for capacity: the server is overloaded, not the client
  // over its quota, so 503 (retryable) rather than 429.
  queue_timeout: 503,
  upstream_unavailable: 503,
  upstream_error: 502,
  upstream_disconnected: 502,
  // The upstream went silent (no chunk within its idle timeout): a gateway timeout.
  upstream_timeout: 504,
  // A per-thread or per-client limit (queued turns, sub-agents, hosted threads): ease off, retry later.
  limit_reached: 429,
  // The server holds as many connections as it takes: retryable, like queue_timeout.
  server_busy: 503,
  // The hosted API's code for a WebSocket past its lifetime (60 minutes), answered 400 there: the
  // client opens a new connection and goes on.
  websocket_connection_limit_reached: 400,
  // The shared response store (Redis) did not answer: retryable, like upstream_unavailable.
  store_unavailable: 503,
  server_error: 500,
};

function typeForStatus(status: number): SparkErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/**
 * The base of every error Spark raises: a literal `code` to branch on (never the message) and the
 * `cause` it wraps. {@link SparkError.from} is the one conversion of any of them to a wire error.
 */
export abstract class CodedError<Code extends string = string> extends Error {
  readonly code: Code;

  constructor(code: Code, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

export class SparkError extends CodedError<SparkErrorCode> {
  readonly status: number;
  readonly param: string | null;
  readonly retryAfterSeconds: number | undefined;

  constructor(code: SparkErrorCode, message: string, options: SparkErrorOptions = {}) {
    super(code, message, options);
    this.name = "SparkError";
    this.status = options.status ?? STATUS[code];
    this.param = options.param ?? null;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get type(): SparkErrorType {
    return typeForStatus(this.status);
  }

  toWire(): WireError {
    return {
      type: this.type,
      code: this.code,
      message: this.message,
      param: this.param,
      ...(this.retryAfterSeconds === undefined
        ? {}
        : { retry_after_seconds: Math.max(1, Math.ceil(this.retryAfterSeconds)) }),
    };
  }

  /**
   * Wraps anything thrown into a SparkError: the one way to a wire error. Errors of other codes
   * (a tool's, the client's) and unknown errors become `server_error` with their message.
   */
  static from(error: unknown): SparkError {
    if (error instanceof SparkError) return error;
    const message = error instanceof Error ? error.message : String(error);
    return new SparkError("server_error", message, { cause: error });
  }
}
