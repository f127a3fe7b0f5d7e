import type { ResponseObject } from "../../protocol/responses.js";
import { ClientError } from "../client-error.js";
import type { CreateBody } from "../create-body.js";
import { type DraftAnswer, NOT_SENT } from "../draft-body.js";
import type { ServerEvent } from "../response-stream.js";
import type { SteerOutcome } from "../steer-outcome.js";
import type { ChainStream } from "./chain-stream.js";
import { ResponseAccumulator } from "./response-accumulator.js";
import { SequenceCheck } from "./sequence-check.js";
import { readSse } from "./sse-reader.js";
import type { Transport } from "./transport.js";

export interface HttpTransportOptions {
  /** `{baseUrl}/responses`. */
  url: string;
  headers: Record<string, string>;
}

/**
 * How long a steer continuation keeps retrying `previous_response_not_found`: the server stores
 * the aborted response only once its run notices the abort (at the next token), which can be
 * after the continuation arrives.
 */
const CONTINUATION_RETRY_MS = 5000;

/** One stream's chain of requests. */
interface HttpRun {
  stream: ChainStream;
  body: CreateBody;
  controller: AbortController | null;
  /** The response streaming now; null before its `response.created`. */
  responseId: string | null;
  accumulator: ResponseAccumulator;
  sequence: SequenceCheck;
  /** Why the current request was aborted. */
  stop: "cancel" | "steer" | "close" | null;
  /** Steer inputs for the continuation not posted yet, and who waits for its `response.created`. */
  steerInputs: string[];
  steerWaiters: ((outcome: SteerOutcome) => void)[];
  /** Woken when the run starts a response, begins a continuation or ends. */
  changed: (() => void)[];
  ended: boolean;
}

/**
 * Responses over HTTP/SSE (`POST {baseUrl}/responses` with `stream: true`), for servers without
 * WebSocket mode. Requests are independent, so streams may run side by side. Steering is emulated:
 * abort the request (the server keeps the partial response when `store` is on), then post a
 * continuation chained to it with the steer text and the same settings, on the same stream.
 */
export class HttpTransport implements Transport {
  readonly kind = "http";
  private readonly runs = new Set<HttpRun>();
  private closed = false;

  constructor(private readonly options: HttpTransportOptions) {}

  start(stream: ChainStream, body: CreateBody): void {
    const run: HttpRun = {
      stream,
      body,
      controller: null,
      responseId: null,
      accumulator: new ResponseAccumulator(),
      sequence: new SequenceCheck(),
      stop: null,
      steerInputs: [],
      steerWaiters: [],
      changed: [],
      ended: false,
    };
    stream.attach({ cancel: () => this.abort(run, "cancel"), steer: (input) => this.steer(run, input) });
    if (this.closed) {
      this.end(run, new ClientError("client_closed", "The client is closed."));
      return;
    }
    this.runs.add(run);
    void this.run(run);
  }

  /** Drafts need a connection that keeps state between requests: HTTP does not send them. */
  async draft(): Promise<DraftAnswer> {
    return NOT_SENT;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const run of this.runs) this.abort(run, "close");
  }

  private async run(run: HttpRun): Promise<void> {
    const request: Record<string, unknown> = { ...run.body, stream: true };
    let continuation = false;
    try {
      for (;;) {
        const ended = await this.post(run, request, continuation);
        if (ended) return;
        if (run.stop === "close") throw new ClientError("client_closed", "The client was closed.");
        if (run.stop === "cancel") {
          this.endCancelled(run);
          return;
        }
        // Steered: chain a continuation to the aborted response, with the same settings.
        Object.assign(request, {
          previous_response_id: run.responseId,
          input:
            run.steerInputs.length === 1
              ? run.steerInputs[0]
              : run.steerInputs.map((text) => ({ role: "user", content: text })),
        });
        delete request.generate;
        run.steerInputs = [];
        run.stop = null;
        continuation = true;
      }
    } catch (error) {
      this.end(run, error instanceof ClientError ? error : new ClientError("connection_lost", String(error)));
    }
  }

  /**
   * One request: streams its events onto the run's stream. Resolves true when the chain ended
   * (terminal event), false when the request was aborted on purpose (`run.stop` says why).
   */
  private async post(run: HttpRun, body: Record<string, unknown>, continuation: boolean): Promise<boolean> {
    const deadline = performance.now() + CONTINUATION_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      const controller = new AbortController();
      run.controller = controller;
      if (run.stop) controller.abort();
      try {
        return await this.request(run, body, controller);
      } catch (error) {
        const retry =
          continuation &&
          error instanceof ClientError &&
          error.code === "previous_response_not_found" &&
          performance.now() < deadline;
        if (!retry) throw error;
        await new Promise((resolve) => setTimeout(resolve, Math.min(10 * 2 ** attempt, 250)));
      }
    }
  }

  private async request(
    run: HttpRun,
    body: Record<string, unknown>,
    controller: AbortController,
  ): Promise<boolean> {
    const { signal } = controller;
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: "POST",
        headers: { ...this.options.headers, "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal,
      });
    } catch (error) {
      if (signal.aborted) return false;
      throw new ClientError("connection_failed", `POST ${this.options.url} failed: ${describe(error)}`, {
        cause: error,
      });
    }
    try {
      if (!response.ok) throw await httpError(response);
      if (!response.body) throw new ClientError("protocol_error", "The server answered without a body.");
      run.sequence = new SequenceCheck();
      for await (const message of readSse(response.body)) {
        // Whatever was buffered when the request was aborted belongs to a response given up on.
        if (signal.aborted) return false;
        if (message.data === "[DONE]") continue;
        const event = parseEvent(message.data);
        const outOfOrder = run.sequence.check(event);
        if (outOfOrder) throw outOfOrder;
        if (this.onEvent(run, event)) return true;
      }
    } catch (error) {
      if (signal.aborted) return false;
      if (error instanceof ClientError) throw error;
      throw new ClientError("connection_lost", `The event stream broke off: ${describe(error)}`, {
        cause: error,
      });
    } finally {
      // Frees the connection after a terminal event or an error; the server then stops the run.
      controller.abort();
    }
    if (run.stop) return false;
    throw new ClientError("connection_lost", "The event stream ended before the response did.");
  }

  /** Hands one event to the stream; returns true when it ended the chain. */
  private onEvent(run: HttpRun, event: ServerEvent): boolean {
    run.accumulator.apply(event);
    run.stream.push(event);
    switch (event.type) {
      case "response.created": {
        run.responseId = event.response.id;
        for (const resolve of run.steerWaiters.splice(0))
          resolve({ status: "accepted", id: event.response.id });
        notify(run);
        return false;
      }
      case "response.completed":
      case "response.incomplete":
        this.end(run, event.response);
        return true;
      case "response.failed":
        throw ClientError.fromWire(event.response.error, { response: event.response });
      case "error":
        throw ClientError.fromWire(event.error, { status: event.status ?? null });
      default:
        return false;
    }
  }

  private async steer(run: HttpRun, input: string): Promise<SteerOutcome> {
    for (;;) {
      if (run.ended || run.stop === "cancel" || run.stop === "close") {
        return {
          status: "failed",
          code: "response_already_completed",
          message: "The response has already ended.",
        };
      }
      if (run.body.store === false) {
        return {
          status: "failed",
          code: "invalid_request",
          message: "Steering over HTTP continues from the stored response; it needs store: true.",
        };
      }
      if (run.stop === "steer" && run.steerInputs.length > 0) {
        // The continuation has not gone out yet: it carries this input too.
        run.steerInputs.push(input);
        return new Promise((resolve) => run.steerWaiters.push(resolve));
      }
      if (run.responseId && run.stop === null && run.steerWaiters.length === 0) {
        const calls = run.accumulator.completedCalls;
        if (calls.length > 0) {
          return {
            status: "pending",
            requiredInput: calls.map((call) => ({
              type: "function_call_output",
              call_id: call.call_id,
              name: call.name,
            })),
          };
        }
        run.steerInputs.push(input);
        const accepted = new Promise<SteerOutcome>((resolve) => run.steerWaiters.push(resolve));
        this.abort(run, "steer");
        return accepted;
      }
      // Not created yet, or a continuation is on its way: steer the response to come.
      await new Promise<void>((resolve) => run.changed.push(resolve));
    }
  }

  private abort(run: HttpRun, reason: "cancel" | "steer" | "close"): void {
    if (run.ended) return;
    // A cancel or close overrides a steer in progress; nothing overrides them.
    if (run.stop === "cancel" || run.stop === "close") return;
    run.stop = reason;
    run.controller?.abort();
    notify(run);
  }

  /** A cancelled request: the stream ends with the response as the consumer saw it. */
  private endCancelled(run: HttpRun): void {
    const response = run.accumulator.incomplete("cancelled");
    if (!response) {
      this.end(run, new ClientError("cancelled", "The response was cancelled before the server created it."));
      return;
    }
    // The server's own terminal event died with the request; this one stands in for it.
    run.stream.push({
      type: "response.incomplete",
      response,
      sequence_number: run.sequence.lastSeen + 1,
    });
    this.end(run, response);
  }

  private end(run: HttpRun, result: ResponseObject | ClientError): void {
    if (run.ended) return;
    run.ended = true;
    this.runs.delete(run);
    const failure: SteerOutcome =
      result instanceof ClientError
        ? { status: "failed", code: result.code, message: result.message }
        : { status: "failed", code: "response_already_completed", message: "The response ended first." };
    for (const resolve of run.steerWaiters.splice(0)) resolve(failure);
    if (result instanceof ClientError) run.stream.fail(result);
    else run.stream.complete(result);
    notify(run);
  }
}

function notify(run: HttpRun): void {
  for (const wake of run.changed.splice(0)) wake();
}

function parseEvent(data: string): ServerEvent {
  let event: unknown;
  try {
    event = JSON.parse(data);
  } catch (error) {
    throw new ClientError("protocol_error", "The server sent an event that is not JSON.", { cause: error });
  }
  if (typeof (event as { type?: unknown } | null)?.type !== "string") {
    throw new ClientError("protocol_error", "The server sent an event without a type.");
  }
  return event as ServerEvent;
}

/** An error answer: the OpenAI-style `{error: {...}}` body when there is one. */
async function httpError(response: Response): Promise<ClientError> {
  const text = await response.text().catch(() => "");
  let wire: unknown;
  try {
    wire = (JSON.parse(text) as { error?: unknown } | null)?.error;
  } catch {
    wire = undefined;
  }
  if (wire && typeof wire === "object") return ClientError.fromWire(wire, { status: response.status });
  const detail = text ? `: ${text.slice(0, 200)}` : "";
  return new ClientError("http_error", `HTTP ${response.status} ${response.statusText}${detail}`, {
    status: response.status,
  });
}

/** fetch hides the reason (ECONNREFUSED, ...) in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
  return `${error.message}${cause}`;
}
