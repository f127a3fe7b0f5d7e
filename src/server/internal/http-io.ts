import type { IncomingMessage, ServerResponse } from "node:http";
import { SparkError } from "../../protocol/errors.js";

export interface BodyLimits {
  maxBytes: number;
  /** Time allowed to receive the whole body. */
  timeoutMs: number;
}

/** Reads a request body, refusing (not truncating) one that is too large or too slow. */
export function readBody(req: IncomingMessage, limits: BodyLimits): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"] ?? "0");
    if (declared > limits.maxBytes) {
      reject(
        new SparkError("payload_too_large", `The request body is larger than ${limits.maxBytes} bytes.`),
      );
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const timer = setTimeout(() => {
      finish(
        new SparkError("request_timeout", `The request body did not arrive within ${limits.timeoutMs} ms.`),
      );
    }, limits.timeoutMs);
    const finish = (error: SparkError | null) => {
      clearTimeout(timer);
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      if (error) {
        req.resume();
        reject(error);
      } else resolve(Buffer.concat(chunks).toString("utf8"));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limits.maxBytes) {
        finish(
          new SparkError("payload_too_large", `The request body is larger than ${limits.maxBytes} bytes.`),
        );
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish(null);
    const onError = (error: Error) =>
      finish(new SparkError("invalid_request", `Reading the body failed: ${error.message}`));
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** The one place an error becomes an HTTP response. */
export function sendError(res: ServerResponse, error: unknown): void {
  const spark = SparkError.from(error);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> =
    spark.retryAfterSeconds === undefined
      ? {}
      : { "retry-after": String(Math.max(1, Math.ceil(spark.retryAfterSeconds))) };
  sendJson(res, spark.status, { error: spark.toWire() }, headers);
}

/** Server-sent events on a response; writes are dropped once the client is gone. */
export class SseWriter {
  private closed = false;

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    res.on("close", () => {
      this.closed = true;
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** `event: <name>` (when given) and one `data:` line. */
  send(data: string, event?: string): void {
    if (this.closed) return;
    this.res.write(event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`);
  }

  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.res.end();
  }
}
