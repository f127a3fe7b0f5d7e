import { ClientError } from "./client-error.js";
import type { CreateBody } from "./create-body.js";
import { type DraftAnswer, type DraftBody, NOT_SENT } from "./draft-body.js";
import { ChainStream } from "./internal/chain-stream.js";
import { HttpTransport } from "./internal/http-transport.js";
import { openWebSocket } from "./internal/open-web-socket.js";
import { SocketTransport } from "./internal/socket-transport.js";
import type { QueuedCreate, Transport } from "./internal/transport.js";
import type { ResponseStream } from "./response-stream.js";
import type { SteerOutcome } from "./steer-outcome.js";

export type { ClientErrorCode } from "./client-error.js";
export { ClientError } from "./client-error.js";
export type { CreateBody } from "./create-body.js";
export type { DraftAnswer, DraftBody } from "./draft-body.js";
export type { ResponseStream, ServerEvent } from "./response-stream.js";
export type { SteerOutcome } from "./steer-outcome.js";

export interface ResponsesClientOptions {
  /** The API root, e.g. `http://127.0.0.1:8080/v1`; requests go to `{baseUrl}/responses`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. Default: none. */
  apiKey?: string;
  /** Try Responses WebSocket mode first. Default: true. */
  webSocket?: boolean;
  /** How long the WebSocket may take to open before the client falls back to HTTP/SSE. Default: 3000 ms. */
  connectTimeoutMs?: number;
  /** Told once, in words, when the client falls back to HTTP/SSE. Default: none. */
  onNotice?: (message: string) => void;
}

export interface CreateOptions {
  /** Aborting cancels the response, as {@link ResponseStream.cancel} does. */
  signal?: AbortSignal;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 3000;

/**
 * A client of the OpenAI Responses API, for Spark's own server or any compatible one. It holds a
 * Responses WebSocket (one response chain in flight at a time per lane; further creates wait
 * their turn; {@link lane} opens another lane of the same socket) and falls back to HTTP/SSE, for
 * good, when the upgrade is refused or does not open in time.
 *
 * ```ts
 * await using client = await ResponsesClient.connect({ baseUrl: "http://127.0.0.1:8080/v1" });
 * const stream = client.create({ model: "m", input: "hi" });
 * for await (const event of stream) if (event.type === "response.output_text.delta") write(event.delta);
 * const response = await stream.final;
 * ```
 */
export class ResponsesClient implements AsyncDisposable {
  private own: Transport;
  private closed = false;
  /** The client that owns the connection: this one, or the one this lane was opened from. */
  private readonly root: ResponsesClient;
  /** This client's WebSocket lane; undefined: the default lane. */
  private readonly streamId: string | undefined;
  /** A lane's streams, ended when the lane is closed (the connection stays). */
  private readonly streams = new Set<ChainStream>();
  private lanesOpened = 0;

  private constructor(
    transport: Transport | null,
    private readonly endpoints: { http: string; ws: string },
    private readonly headers: Record<string, string>,
    private readonly options: ResponsesClientOptions,
    lane?: { root: ResponsesClient; streamId: string },
  ) {
    // A lane never uses its own transport: it reads the root's, which a fallback can replace.
    this.own = transport ?? lane?.root.own ?? new HttpTransport({ url: endpoints.http, headers });
    this.root = lane?.root ?? this;
    this.streamId = lane?.streamId;
  }

  private get current(): Transport {
    return this.root.own;
  }

  /**
   * Opens the WebSocket (unless `webSocket: false`), or settles for HTTP/SSE, saying so through
   * `onNotice`. Does not reject when the server is unreachable: the first create reports that.
   */
  static async connect(options: ResponsesClientOptions): Promise<ResponsesClient> {
    const endpoints = responsesEndpoints(options.baseUrl);
    const headers: Record<string, string> = options.apiKey
      ? { authorization: `Bearer ${options.apiKey}` }
      : {};
    if (options.webSocket === false) return new ResponsesClient(null, endpoints, headers, options);
    const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    const opened = await openWebSocket(endpoints.ws, { headers, timeoutMs: connectTimeoutMs });
    if (!opened.ok) {
      options.onNotice?.(`WebSocket unavailable (${opened.reason}); using HTTP/SSE`);
      return new ResponsesClient(null, endpoints, headers, options);
    }
    // The transport reports back through the client, which exists only after it: bind late.
    let client: ResponsesClient | undefined;
    const transport = new SocketTransport(opened.socket, {
      url: endpoints.ws,
      headers,
      connectTimeoutMs,
      onUnavailable: (reason, queued) => client?.fallBack(reason, queued),
    });
    client = new ResponsesClient(transport, endpoints, headers, options);
    return client;
  }

  /** How responses travel now; `websocket` can become `http` after a failed reconnect, never back. */
  get transport(): "websocket" | "http" {
    return this.current.kind;
  }

  /**
   * Starts a response and returns its stream at once. Over WebSocket a create waits while another
   * stream's chain is still on the connection (until that one's final event arrives).
   */
  create(body: CreateBody, options: CreateOptions = {}): ResponseStream {
    const stream = new ChainStream(this, options.signal);
    if (this.closed || this.root.closed)
      stream.fail(new ClientError("client_closed", "The client is closed."));
    else if (options.signal?.aborted) {
      stream.fail(new ClientError("cancelled", "The signal was aborted before the response started."));
    } else {
      if (this.root !== this) {
        this.streams.add(stream);
        void stream.final.finally(() => this.streams.delete(stream)).catch(() => {});
      }
      this.current.start(stream, body, this.streamId);
    }
    return stream;
  }

  /**
   * A client on a new lane (`stream_id`) of this client's connection: its responses run beside
   * this one's, not after them, with no connection of their own. Over HTTP/SSE a lane is simply
   * another client of the same transport. Closing the lane ends its own streams only.
   */
  lane(): ResponsesClient {
    const root = this.root;
    const streamId = `lane-${++root.lanesOpened}`;
    return new ResponsesClient(null, root.endpoints, root.headers, root.options, { root, streamId });
  }

  /**
   * Steers the running response of `stream`: it stops at the next token and a successor continues
   * with `input`, on the same stream. A stream between a response and its successor is steered
   * once the successor starts.
   */
  steer(stream: ResponseStream, input: string): Promise<SteerOutcome> {
    if (!(stream instanceof ChainStream) || stream.owner !== this) {
      return Promise.reject(new ClientError("invalid_request", "The stream belongs to another client."));
    }
    return stream.steer(input);
  }

  /**
   * Type-ahead: sends the message being typed so the server can evaluate its settled part into the
   * conversation's state before the real create. Output is never changed by it. Over HTTP/SSE, or
   * while the WebSocket is not open, nothing is sent (`not_sent`). Never rejects.
   */
  draft(body: DraftBody): Promise<DraftAnswer> {
    if (this.closed || this.root.closed) return Promise.resolve(NOT_SENT);
    return this.current.draft(body);
  }

  /**
   * Ends running streams with `client_closed` and closes the connection; a lane cancels and ends
   * its own streams and leaves the connection open. Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.root === this) {
      await this.own.close();
      return;
    }
    const closed = new ClientError("client_closed", "The client was closed.");
    for (const stream of this.streams) {
      stream.cancel();
      stream.fail(closed);
    }
    this.streams.clear();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private fallBack(reason: string, queued: QueuedCreate[]): void {
    this.own = new HttpTransport({ url: this.endpoints.http, headers: this.headers });
    this.options.onNotice?.(`WebSocket unavailable (${reason}); using HTTP/SSE`);
    for (const { stream, body, streamId } of queued) {
      if (this.closed) stream.fail(new ClientError("client_closed", "The client is closed."));
      else this.own.start(stream, body, streamId);
    }
  }
}

/** `{baseUrl}/responses`, and the same over `ws:`/`wss:`. */
function responsesEndpoints(baseUrl: string): { http: string; ws: string } {
  const url = new URL(baseUrl);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ClientError("invalid_request", `baseUrl must be an http(s) URL, not '${baseUrl}'.`);
  }
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/responses`;
  const http = url.toString();
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return { http, ws: url.toString() };
}
