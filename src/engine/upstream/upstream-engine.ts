import { readSse, SseEventTooLarge } from "../../client/server-sent-events.js";
import { SparkError } from "../../protocol/errors.js";
import {
  type DraftResult,
  type Engine,
  type EngineEvent,
  type EngineInfo,
  type GenerateOptions,
  type GenerateRequest,
  IGNORED_DRAFT,
} from "../engine.js";
import { type ChatCompletionChunk, chatCompletionBody } from "./internal/chat-wire.js";
import { ChunkDecoder } from "./internal/chunk-decoder.js";
import { prefixBlocks } from "./internal/prefix-blocks.js";
import { StallTimer } from "./internal/stall-timer.js";
import {
  disconnected,
  failureFromErrorChunk,
  failureFromNetwork,
  failureFromOversizedEvent,
  failureFromResponse,
  failureFromStall,
  type UpstreamFailure,
} from "./internal/upstream-failure.js";
import { type Replica, ReplicaPool, type ReplicaPoolOptions } from "./replica-pool.js";

export interface UpstreamEngineOptions
  extends Pick<
    ReplicaPoolOptions,
    | "healthPath"
    | "healthTimeoutMs"
    | "healthIntervalMs"
    | "healthChecks"
    | "affinityCapacity"
    | "routing"
    | "prefixCapacity"
    | "loadWeight"
  > {
  /**
   * The API roots of the replicas serving the model (`http://gpu-1:8000/v1`); one is a pool of
   * one. Requests go to `{replica}/chat/completions`.
   */
  replicas: string[];
  /** The id clients name in `model`. Default: {@link model}. */
  id?: string;
  /** The model name the upstream serves (sent as `model`). Default: {@link id}; one of them is required. */
  model?: string;
  /** Sent as `Authorization: Bearer <apiKey>`. Default: none. */
  apiKey?: string;
  /**
   * The HTTP header carrying the conversation id on every request, for a router's session or
   * prefix routing (vLLM's router reads `x-session-id`); `prompt_cache_key` carries it in the body
   * too. Default: `x-session-id`.
   */
  sessionHeader?: string;
  /** Characters of serialized prompt per prefix block (`prefix` routing). Default: 256. */
  prefixBlockChars?: number;
  /**
   * Tokens one conversation can hold. Default: what the upstream reports at `create` (vLLM and
   * SGLang report `max_model_len`), else 32768.
   */
  contextSize?: number;
  /**
   * Longest wait from sending a request to its first streamed chunk (headers included, so a prompt's
   * prefill counts); past it the request is closed and another replica tried. Default: 60 s.
   */
  firstChunkTimeoutMs?: number;
  /**
   * Longest wait for each later chunk; past it the request is closed: another replica is tried if
   * nothing was output yet, else the response fails with `upstream_timeout`. Default: 30 s.
   */
  idleTimeoutMs?: number;
  /**
   * Largest server-sent event (or line) read from an upstream, in bytes; a longer one closes the
   * request as an `upstream_error` rather than being buffered. Default: 1 MiB.
   */
  maxEventBytes?: number;
}

/** Defaults of {@link UpstreamEngineOptions}. */
export const UPSTREAM_TIMEOUT_DEFAULTS = { firstChunkTimeoutMs: 60_000, idleTimeoutMs: 30_000 } as const;
const DEFAULT_MAX_EVENT_BYTES = 1 << 20;

const DEFAULT_CONTEXT = 32768;
/** The header vLLM's router reads for session affinity. */
export const DEFAULT_SESSION_HEADER = "x-session-id";
/** A conversation id a header can carry as it is (a client's `prompt_cache_key` may not be one). */
const HEADER_VALUE = /^[\x21-\x7e]{1,256}$/;

/**
 * Any OpenAI-compatible server (vLLM, SGLang, llama-server, Ollama, a cloud API, another Spark)
 * behind the engine interface, over streamed Chat Completions. Requests go to a {@link ReplicaPool}:
 * conversation-affine, least-loaded, health-checked. A request that fails before any output
 * reached the consumer moves to another healthy replica transparently; one that breaks mid-stream
 * throws `upstream_disconnected` (the next turn goes to a healthy replica); one that goes silent
 * past its first-chunk or idle timeout is closed the same way, with `upstream_timeout` once output
 * was sent, so a stalled upstream never holds a request (or its admission slot). Aborting, or breaking
 * out of the stream, aborts the HTTP request: the upstream sees the connection close and stops
 * decoding.
 *
 * `prefillOnly` sends the prompt with `max_tokens: 1` and discards the token: it warms the
 * upstream's prefix cache, the nearest thing to a pre-warm an OpenAI-compatible server offers.
 */
export class UpstreamEngine implements Engine {
  readonly info: EngineInfo;
  readonly pool: ReplicaPool;
  private readonly model: string;
  private readonly controllers = new Set<AbortController>();
  private disposed = false;

  constructor(private readonly options: UpstreamEngineOptions) {
    const model = options.model ?? options.id;
    if (!model) throw new SparkError("invalid_request", "An upstream engine needs a model name or an id.");
    this.model = model;
    this.info = {
      id: options.id ?? model,
      engine: "upstream",
      contextSize: options.contextSize ?? DEFAULT_CONTEXT,
    };
    this.pool = new ReplicaPool(options);
  }

  /** Checks every replica once, and learns the context size from the first that reports it. */
  static async create(options: UpstreamEngineOptions): Promise<UpstreamEngine> {
    const engine = new UpstreamEngine(options);
    await engine.pool.checkAll();
    if (options.contextSize === undefined) {
      const reported = await engine.reportedContextSize();
      if (reported) engine.info.contextSize = reported;
    }
    return engine;
  }

  async *generate(request: GenerateRequest, options: GenerateOptions = {}): AsyncGenerator<EngineEvent> {
    if (this.disposed) throw new SparkError("model_not_loaded", "The upstream engine has been disposed.");
    const started = performance.now();
    const { signal } = options;
    const wire = chatCompletionBody(request, this.model);
    const body = JSON.stringify(wire);
    const blocks =
      this.pool.routing === "prefix" && this.pool.replicas.length > 1
        ? prefixBlocks(wire, this.options.prefixBlockChars)
        : [];
    const tried = new Set<Replica>();
    let last: UpstreamFailure | undefined;
    for (;;) {
      if (signal?.aborted) {
        yield { type: "done", result: new ChunkDecoder(started).result("cancelled") };
        return;
      }
      const replica = this.pool.pick(request.conversation, tried, blocks);
      if (!replica) {
        throw (
          last?.error ?? new SparkError("upstream_unavailable", "No upstream replica could take the request.")
        );
      }
      tried.add(replica);
      this.pool.sent(replica, blocks);
      const outcome = yield* this.attempt(replica, body, request, started, signal);
      if (outcome === "done") return;
      last = outcome;
      if (outcome.replicaDown) this.pool.failed(replica, outcome.error.message);
      if (!outcome.retryable) throw outcome.error;
    }
  }

  /**
   * One try on one replica. Yields its events and returns `done`, or returns why it failed
   * before any output (so another replica can take it); throws once output was yielded.
   */
  private async *attempt(
    replica: Replica,
    body: string,
    request: GenerateRequest,
    started: number,
    signal: AbortSignal | undefined,
  ): AsyncGenerator<EngineEvent, "done" | UpstreamFailure> {
    const controller = new AbortController();
    this.controllers.add(controller);
    const decoder = new ChunkDecoder(started, request.prefillOnly === true);
    // Bounds every wait on the upstream: for headers and the first chunk, then for each next chunk.
    const stall = new StallTimer(() => controller.abort());
    stall.arm(this.options.firstChunkTimeoutMs ?? UPSTREAM_TIMEOUT_DEFAULTS.firstChunkTimeoutMs);
    let yielded = 0;
    replica.inFlight++;
    try {
      let response: Response;
      try {
        response = await fetch(`${replica.url}/chat/completions`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "text/event-stream",
            ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
            ...(request.conversation && HEADER_VALUE.test(request.conversation)
              ? { [this.options.sessionHeader ?? DEFAULT_SESSION_HEADER]: request.conversation }
              : {}),
          },
          body,
          signal: AbortSignal.any([controller.signal, ...(signal ? [signal] : [])]),
        });
      } catch (error) {
        if (signal?.aborted) return yield* this.cancelled(decoder);
        if (stall.fired) return failureFromStall(replica.url, stall.waitMs, 0);
        return failureFromNetwork(error, replica.url);
      }
      if (!response.ok) return await failureFromResponse(response, replica.url);
      if (!response.body) return failureFromNetwork(new Error("an empty response body"), replica.url);

      const maxEventBytes = this.options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
      const messages = readSse(response.body, { maxEventBytes });
      try {
        for (let received = 0; ; received++) {
          // The first wait goes on with the request's first-chunk deadline; later ones start afresh.
          if (received > 0) stall.arm(this.options.idleTimeoutMs ?? UPSTREAM_TIMEOUT_DEFAULTS.idleTimeoutMs);
          const next = await messages.next();
          stall.stop();
          if (next.done || signal?.aborted) break;
          const message = next.value;
          if (message.data === "[DONE]") break;
          const chunk = parseChunk(message.data);
          if (chunk?.error) {
            const failure = failureFromErrorChunk(chunk.error, replica.url);
            if (yielded === 0) return failure;
            throw failure.error;
          }
          if (!chunk) continue;
          for (const event of decoder.push(chunk)) {
            yielded++;
            yield event;
            if (signal?.aborted) break;
          }
        }
      } catch (error) {
        if (error instanceof SparkError) throw error;
        if (signal?.aborted) return yield* this.cancelled(decoder);
        const failure = stall.fired
          ? failureFromStall(replica.url, stall.waitMs, yielded)
          : error instanceof SseEventTooLarge
            ? failureFromOversizedEvent(replica.url, error.maxBytes)
            : undefined;
        if (failure) {
          this.pool.failed(replica, failure.error.message);
          if (yielded === 0) return failure;
          throw failure.error;
        }
        this.pool.failed(replica, `stream broke: ${String(error)}`);
        if (yielded === 0) return failureFromNetwork(error, replica.url);
        throw disconnected(replica.url, yielded, error);
      } finally {
        await messages.return(undefined);
      }
      if (signal?.aborted) return yield* this.cancelled(decoder);
      if (!decoder.finished) {
        // The body ended without a finish reason: the upstream went away mid-response.
        const cause = new Error("the stream ended before the response finished");
        this.pool.failed(replica, cause.message);
        if (yielded === 0) return failureFromNetwork(cause, replica.url);
        throw disconnected(replica.url, yielded, cause);
      }
      for (const event of decoder.flush()) yield event;
      this.pool.served(replica, request.conversation);
      yield { type: "done", result: decoder.result() };
      return "done";
    } finally {
      stall.stop();
      replica.inFlight--;
      // Closing the connection is how an upstream learns to stop decoding.
      controller.abort();
      this.controllers.delete(controller);
    }
  }

  private async *cancelled(decoder: ChunkDecoder): AsyncGenerator<EngineEvent, "done"> {
    yield { type: "done", result: decoder.result("cancelled") };
    return "done";
  }

  private async reportedContextSize(): Promise<number | undefined> {
    for (const replica of this.pool.replicas.filter((r) => r.healthy)) {
      try {
        const response = await fetch(`${replica.url}/models`, {
          headers: this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {},
          signal: AbortSignal.timeout(this.options.healthTimeoutMs ?? 2000),
        });
        const list = (await response.json()) as { data?: { id?: string; max_model_len?: unknown }[] };
        const entry = list.data?.find((m) => m.id === this.model) ?? list.data?.[0];
        if (typeof entry?.max_model_len === "number" && entry.max_model_len > 0) return entry.max_model_len;
      } catch {}
    }
    return undefined;
  }

  /** Aborts running requests and stops health checks. Idempotent. */
  /** An upstream's cache is its own business: drafts are accepted and ignored. */
  async draft(): Promise<DraftResult> {
    return IGNORED_DRAFT;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    this.pool.dispose();
    for (const controller of this.controllers) controller.abort();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

function parseChunk(data: string): ChatCompletionChunk | undefined {
  try {
    const parsed = JSON.parse(data) as unknown;
    return parsed && typeof parsed === "object" ? (parsed as ChatCompletionChunk) : undefined;
  } catch {
    return undefined;
  }
}
