import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type GenerateResult, tokensPerSecond } from "../../engine/engine.js";
import { SparkError } from "../../protocol/errors.js";

/** `json`: one JSON object per line; `text`: one short human line; `off`: nothing. */
export type LogFormat = "json" | "text" | "off";

export interface RequestLogOptions {
  /** Default: `off`. */
  format?: LogFormat;
  /** Where lines go (each ends with a newline). Default: stderr. */
  write?: (line: string) => void;
}

/** What one log line says about one request (HTTP) or one response (WebSocket). */
export interface RequestFields {
  request_id: string;
  transport: "http" | "ws";
  method?: string;
  path?: string;
  /** HTTP status, or the response status over WebSocket. */
  status?: number | string;
  model?: string;
  tier?: string;
  /** `anonymous` or a short digest of the API key (never the key). */
  key?: string;
  response_id?: string;
  queue_ms?: number;
  ttft_ms?: number;
  input_tokens?: number;
  cached_tokens?: number;
  output_tokens?: number;
  tokens_per_second?: number;
  stop_reason?: string;
  error_code?: string;
  error?: string;
  duration_ms?: number;
}

/** Accepted from a proxy's `x-request-id`; anything else gets a fresh id. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** One request's facts, filled in as it runs and written once when it ends. */
export class RequestRecord {
  readonly fields: RequestFields;
  private readonly started = performance.now();
  private ended = false;

  constructor(
    fields: RequestFields,
    private readonly write: (fields: RequestFields) => void,
  ) {
    this.fields = fields;
  }

  get id(): string {
    return this.fields.request_id;
  }

  set(fields: Partial<RequestFields>): void {
    Object.assign(this.fields, fields);
  }

  /** Usage and timing of the engine's result. */
  result(result: GenerateResult): void {
    this.set({
      ttft_ms: round(result.timing.firstTokenMs),
      input_tokens: result.usage.inputTokens,
      cached_tokens: result.usage.cachedInputTokens,
      output_tokens: result.usage.outputTokens,
      tokens_per_second: round(tokensPerSecond(result)),
      stop_reason: result.stopReason,
    });
  }

  fail(error: unknown): void {
    const spark = SparkError.from(error);
    this.set({ error_code: spark.code, error: spark.message });
  }

  /** Writes the line (once). */
  end(fields: Partial<RequestFields> = {}): void {
    if (this.ended) return;
    this.ended = true;
    this.set({ ...fields, duration_ms: round(performance.now() - this.started) });
    this.write(this.fields);
  }
}

/** Structured per-request logs with request ids. */
export class RequestLog {
  private readonly format: LogFormat;
  private readonly out: (line: string) => void;
  private readonly records = new WeakMap<IncomingMessage, RequestRecord>();

  constructor(options: RequestLogOptions = {}) {
    this.format = options.format ?? "off";
    this.out = options.write ?? ((line) => process.stderr.write(line));
  }

  /**
   * Starts the record of an HTTP request: answers its id in `x-request-id` and writes the line
   * when the response is finished or the connection closes.
   */
  http(req: IncomingMessage, res: ServerResponse): RequestRecord {
    const incoming = req.headers["x-request-id"];
    const id = typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : newRequestId();
    res.setHeader("x-request-id", id);
    const record = new RequestRecord(
      { request_id: id, transport: "http", method: req.method, path: (req.url ?? "/").split("?")[0] },
      (fields) => this.emit(fields),
    );
    this.records.set(req, record);
    res.once("close", () => record.end({ status: res.statusCode }));
    return record;
  }

  /** The record {@link http} started for `req`. */
  recordOf(req: IncomingMessage): RequestRecord | undefined {
    return this.records.get(req);
  }

  /** Starts the record of one response over a WebSocket (the caller ends it). */
  socket(fields: Omit<RequestFields, "transport">): RequestRecord {
    return new RequestRecord({ ...fields, transport: "ws" }, (all) => this.emit(all));
  }

  private emit(fields: RequestFields): void {
    if (this.format === "off") return;
    if (this.format === "json") {
      this.out(`${JSON.stringify({ time: new Date().toISOString(), level: levelOf(fields), ...fields })}\n`);
      return;
    }
    const what =
      fields.transport === "ws" ? `WS ${fields.response_id ?? ""}` : `${fields.method} ${fields.path}`;
    const parts = [what, String(fields.status ?? "")];
    if (fields.model) parts.push(fields.model);
    if (fields.output_tokens !== undefined) parts.push(`${fields.output_tokens} tok`);
    if (fields.queue_ms) parts.push(`queued ${fields.queue_ms} ms`);
    if (fields.ttft_ms !== undefined) parts.push(`ttft ${fields.ttft_ms} ms`);
    parts.push(`${fields.duration_ms ?? 0} ms`);
    if (fields.error_code) parts.push(fields.error_code);
    parts.push(fields.request_id);
    this.out(`${parts.join(" ")}\n`);
  }
}

export function newRequestId(): string {
  return `req_${randomBytes(12).toString("hex")}`;
}

function levelOf(fields: RequestFields): "info" | "warn" | "error" {
  if (typeof fields.status === "number" && fields.status >= 500) return "error";
  if (fields.error_code) return "warn";
  return "info";
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
