import { SparkError } from "../../../protocol/errors.js";

/** Why an upstream call failed, and what that means for the other replicas. */
export interface UpstreamFailure {
  error: SparkError;
  /** Another replica may well succeed (the request itself is not at fault). */
  retryable: boolean;
  /** The replica itself is at fault: route around it until a health check passes. */
  replicaDown: boolean;
}

/** Bytes of an error body read for its message. */
const ERROR_BODY_LIMIT = 8192;

/** An upstream's non-2xx answer, mapped to what Spark's clients should see. */
export async function failureFromResponse(response: Response, url: string): Promise<UpstreamFailure> {
  const status = response.status;
  const detail = await errorMessage(response);
  const said = detail ? `: ${detail}` : "";
  const retryAfter = retryAfterSeconds(response.headers.get("retry-after"));
  // A router or replica shedding load says when to come back: the client hears the same, and nothing
  // is marked down (another replica may still take the request).
  if (status === 429 || (status === 503 && retryAfter !== undefined)) {
    return {
      error: new SparkError("rate_limited", `The upstream ${url} is rate limiting (${status})${said}`, {
        ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
      }),
      retryable: true,
      replicaDown: false,
    };
  }
  if (status >= 500) {
    return {
      error: new SparkError("upstream_unavailable", `The upstream ${url} failed (${status})${said}`),
      retryable: true,
      replicaDown: true,
    };
  }
  if (status === 401 || status === 403) {
    // Spark's own key to the upstream is wrong: a server configuration error, not the client's.
    return {
      error: new SparkError(
        "upstream_error",
        `The upstream ${url} refused Spark's API key (${status})${said}`,
      ),
      retryable: false,
      replicaDown: false,
    };
  }
  if (status === 404) {
    // A replica that does not serve the model is misconfigured; the others may.
    return {
      error: new SparkError("upstream_error", `The upstream ${url} does not serve this model (404)${said}`),
      retryable: true,
      replicaDown: true,
    };
  }
  // Other 4xx: the request itself (too long for the context, a parameter the upstream refuses).
  return {
    error: new SparkError("upstream_error", `The upstream ${url} refused the request (${status})${said}`, {
      status: 400,
    }),
    retryable: false,
    replicaDown: false,
  };
}

/** Longest `Retry-After` passed on (a day): a larger or malformed value is dropped, not clamped. */
const MAX_RETRY_AFTER_SECONDS = 86_400;

/**
 * An upstream's `Retry-After` in seconds: delta-seconds or an HTTP-date (RFC 9110 §10.2.3);
 * undefined when absent, malformed or beyond a day.
 */
export function retryAfterSeconds(header: string | null, now = Date.now()): number | undefined {
  if (header === null) return undefined;
  const text = header.trim();
  const seconds = /^\d{1,9}$/.test(text)
    ? Number(text)
    : /^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)
      ? Math.ceil((Date.parse(text) - now) / 1000)
      : Number.NaN;
  if (!Number.isFinite(seconds) || seconds > MAX_RETRY_AFTER_SECONDS) return undefined;
  return Math.max(1, seconds);
}

/** The upstream could not be reached, or did not answer in time. */
export function failureFromNetwork(error: unknown, url: string): UpstreamFailure {
  return {
    error: new SparkError("upstream_unavailable", `Could not reach the upstream ${url}: ${describe(error)}`, {
      cause: error,
    }),
    retryable: true,
    replicaDown: true,
  };
}

/** An error chunk inside the stream (`data: {"error": …}`). */
export function failureFromErrorChunk(
  error: { message?: string; type?: string; code?: string | null },
  url: string,
): UpstreamFailure {
  const serverSide = error.type === "server_error" || error.type === undefined;
  return {
    error: new SparkError(
      "upstream_error",
      `The upstream ${url} failed mid-stream${error.code ? ` (${error.code})` : ""}: ${error.message ?? "no message"}`,
    ),
    retryable: serverSide,
    replicaDown: false,
  };
}

/**
 * The upstream sent nothing for `waitMs` (no headers, no first chunk, or no next chunk). Before any
 * output another replica may take the request; after it, `throw` the error: the turn must be retried.
 */
export function failureFromStall(url: string, waitMs: number, outputChunks: number): UpstreamFailure {
  const when =
    outputChunks === 0 ? "before its first output" : `mid-response (after ${outputChunks} output chunks)`;
  return {
    error: new SparkError(
      "upstream_timeout",
      `The upstream ${url} sent nothing for ${waitMs} ms ${when}; the request was closed.${outputChunks === 0 ? "" : " Retry the turn."}`,
    ),
    retryable: true,
    replicaDown: true,
  };
}

/** The upstream sent one event longer than Spark buffers: a broken or hostile replica. */
export function failureFromOversizedEvent(url: string, maxBytes: number): UpstreamFailure {
  return {
    error: new SparkError(
      "upstream_error",
      `The upstream ${url} sent a stream event longer than ${maxBytes} bytes; the request was closed.`,
    ),
    retryable: true,
    replicaDown: true,
  };
}

/** The stream broke after output had reached the client: the response cannot be resumed. */
export function disconnected(url: string, outputChunks: number, cause: unknown): SparkError {
  return new SparkError(
    "upstream_disconnected",
    `The upstream ${url} closed the stream mid-response (after ${outputChunks} output chunks): ${describe(cause)}. Retry the turn.`,
    { cause },
  );
}

export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === "string") return `${error.message} (${code})`;
  if (cause instanceof Error) return `${error.message}: ${cause.message}`;
  return error.message;
}

async function errorMessage(response: Response): Promise<string> {
  let text: string;
  try {
    text = (await response.text()).slice(0, ERROR_BODY_LIMIT);
  } catch {
    return "";
  }
  try {
    const body = JSON.parse(text) as {
      error?: { message?: unknown } | string;
      message?: unknown;
      detail?: unknown;
    };
    const message =
      typeof body.error === "string" ? body.error : (body.error?.message ?? body.message ?? body.detail);
    if (typeof message === "string") return message;
  } catch {}
  return text.trim().slice(0, 500);
}
