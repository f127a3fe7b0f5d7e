import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { SparkError } from "../protocol/errors.js";
import { DEFAULT_JSON_LIMITS } from "../protocol/json-guard.js";
import type { AdmissionConfig } from "./admission/scheduler.js";
import { handleChatCompletionsPost } from "./chat-completions-http.js";
import {
  checkApiKey,
  checkOrigin,
  digest,
  hasApiKey,
  KEY_SUBPROTOCOL_PREFIX,
  ownOrigins,
  SPARK_SUBPROTOCOL,
} from "./internal/access.js";
import { sendError, sendJson } from "./internal/http-io.js";
import { RecentIds } from "./internal/recent-ids.js";
import { serveStatic } from "./internal/static-files.js";
import type { RequestLogOptions } from "./metrics/request-log.js";
import type { ModelRegistry } from "./model-registry.js";
import type { ResponseStore } from "./response-store.js";
import { handleResponsesPost } from "./responses-http.js";
import { ResponsesSocket } from "./responses-socket.js";
import type { ServerContext } from "./server-context.js";
import { countRefusal, sendMetrics, servingParts } from "./serving-parts.js";
import { MemoryResponseStore } from "./store/memory-response-store.js";

export interface SparkServerOptions {
  models: ModelRegistry;
  /** Default: 127.0.0.1 (local only). */
  host?: string;
  /** Default: 0 (any free port). */
  port?: number;
  /** Bearer keys accepted; empty means no authentication. Default: none. */
  apiKeys?: string[];
  /** Browser origins allowed besides Spark's own. Default: none. */
  allowedOrigins?: string[];
  /** PEM certificate and key: serve HTTPS and WSS. Default: plain HTTP. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Largest request body or WebSocket event. Default: 8 MiB. */
  maxBodyBytes?: number;
  /** Time to receive a request body. Default: 30 s. */
  bodyTimeoutMs?: number;
  /** Stored responses kept for `previous_response_id`. Default: 4096. */
  storeCapacity?: number;
  /**
   * Bytes of stored responses, with the earlier turns they still need; least recently used go
   * first. Default: 256 MiB.
   */
  storeBytes?: number;
  /** Idle time after which a stored response expires; 0: never. Default: 24 hours. */
  storeTtlMs?: number;
  /**
   * Where responses are kept: a store shared with other servers (see RedisResponseStore), disposed
   * by `close()`. Default: in this process, bounded by the three options above.
   */
  store?: ResponseStore;
  /**
   * Bytes of the recent responses each Responses WebSocket remembers for `previous_response_id`
   * (16 at most), even with `store: false`. Default: 16 MiB.
   */
  connectionCacheBytes?: number;
  /**
   * WebSocket connections open at once, all endpoints together; an upgrade beyond it is refused
   * with 503 `server_busy`. Default: 256.
   */
  maxConnections?: number;
  /**
   * How long a Responses WebSocket may stay open; then it gets `websocket_connection_limit_reached`
   * and closes once its running responses finish (clients reconnect). Default: 60 minutes.
   */
  connectionLifetimeMs?: number;
  /**
   * More WebSocket endpoints on the same port (e.g. the agent host at `/v1/agent`), behind the same
   * origin and API-key checks. Default: none.
   */
  sockets?: Record<string, (socket: WebSocket) => void>;
  /**
   * A folder of static files served at `/` for GET and HEAD (the web app; `/` is its `index.html`).
   * Paths under `/v1/` are never files. Static files need no API key (they hold no secrets; the
   * page brings its key to the WebSocket). Default: none.
   */
  staticDir?: string;
  /** Concurrency, queue and per-key rate limits (see {@link AdmissionConfig}). Default: none. */
  admission?: AdmissionConfig;
  /** Serve `GET /metrics` without an API key. Default: false (same key rules as /v1). */
  metricsPublic?: boolean;
  /** Per-request log lines. Default: off. */
  log?: RequestLogOptions;
}

type Handler = (req: IncomingMessage, res: ServerResponse, ctx: ServerContext) => Promise<void> | void;

/** The model server: Responses over HTTP/SSE and WebSocket, and Chat Completions, on one port. */
export class SparkServer implements AsyncDisposable {
  private readonly wss: WebSocketServer;
  private readonly ctx: ServerContext;
  private readonly apiKeys: Buffer[];
  private allowedOrigins = new Set<string>();
  private readonly routes: Record<string, Handler>;
  private closed = false;

  private constructor(
    private readonly server: Server,
    private readonly options: SparkServerOptions,
  ) {
    const maxBytes = options.maxBodyBytes ?? DEFAULT_JSON_LIMITS.maxBytes;
    this.ctx = {
      models: options.models,
      store:
        options.store ??
        new MemoryResponseStore({
          maxEntries: options.storeCapacity,
          maxBytes: options.storeBytes,
          ttlMs: options.storeTtlMs,
        }),
      ranHere: new RecentIds(65_536),
      connectionCache: { maxEntries: 16, maxBytes: options.connectionCacheBytes ?? 16 * 1024 * 1024 },
      body: { maxBytes, timeoutMs: options.bodyTimeoutMs ?? 30_000 },
      json: { ...DEFAULT_JSON_LIMITS, maxBytes },
      running: new Map(),
      ...servingParts(options),
    };
    this.apiKeys = (options.apiKeys ?? []).map(digest);
    // Frames up to 4x the event limit are read and answered with an error event, keeping the
    // connection; anything larger closes it (1009), bounding memory per connection.
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: maxBytes * 4,
      // Measured: ws compresses every frame once deflate is negotiated (even a 160-byte delta), which
      // took a one-token round trip from 0.6 ms to 2-4 ms. Deltas are small; latency wins.
      perMessageDeflate: false,
      // Browsers require an answer to the subprotocols they offer: Spark's own when offered, else
      // the first one (ws's default) — never the one carrying a key.
      handleProtocols: (protocols) =>
        protocols.has(SPARK_SUBPROTOCOL)
          ? SPARK_SUBPROTOCOL
          : ([...protocols].find((p) => !p.startsWith(KEY_SUBPROTOCOL_PREFIX)) ?? false),
    });
    this.routes = {
      "GET /healthz": (req, res) => this.health(req, res),
      "GET /health": (_req, res) => this.ready(res),
      "GET /v1/models": (_req, res) => this.listModels(res),
      "POST /v1/responses": handleResponsesPost,
      "POST /v1/chat/completions": handleChatCompletionsPost,
      "GET /metrics": (_req, res) => sendMetrics(res, this.ctx.metrics),
    };
    server.on("request", (req, res) => void this.onRequest(req, res));
    server.on("upgrade", (req, socket, head) => this.onUpgrade(req, socket, head));
  }

  static async start(options: SparkServerOptions): Promise<SparkServer> {
    const server = options.tls
      ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key })
      : createHttpServer();
    server.headersTimeout = 10_000;
    server.requestTimeout = 0; // streamed responses may run long; bodies have their own timeout
    server.keepAliveTimeout = 30_000;
    const spark = new SparkServer(server, options);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    const origins = ownOrigins(options.host ?? "127.0.0.1", spark.port, Boolean(options.tls));
    spark.allowedOrigins = new Set(
      [...origins, ...(options.allowedOrigins ?? [])].map((o) => o.toLowerCase()),
    );
    return spark;
  }

  /** Where responses are kept for `previous_response_id`. */
  get store(): ResponseStore {
    return this.ctx.store;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** `http://host:port` (https with TLS). */
  get url(): string {
    const host = this.options.host ?? "127.0.0.1";
    const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
    return `${this.options.tls ? "https" : "http"}://${shown.includes(":") ? `[${shown}]` : shown}:${this.port}`;
  }

  /**
   * Whether the server is up (`ok`), still loading a model (`loading`), or has a model that failed
   * to load (`error`, 503). Only a request with the key (or a server without keys) also gets the
   * models, their progress and load errors: those name local paths.
   */
  private health(req: IncomingMessage, res: ServerResponse): void {
    const models = this.ctx.models.list();
    const status = models.some((model) => model.status === "failed")
      ? "error"
      : models.some((model) => model.status === "loading")
        ? "loading"
        : "ok";
    sendJson(
      res,
      status === "error" ? 503 : 200,
      hasApiKey(req, this.apiKeys) ? { status, models } : { status },
    );
  }

  /**
   * What routers and load balancers probe (llama-server's, vLLM's and SGLang's `/health`): 200 only
   * once every model is ready, 503 while one loads or after one failed, so no traffic is sent to a
   * server that cannot answer yet. No key needed, nothing listed.
   */
  private ready(res: ServerResponse): void {
    const ready = this.ctx.models.list().every((model) => model.status === "ready");
    sendJson(res, ready ? 200 : 503, { status: ready ? "ok" : "unavailable" });
  }

  /**
   * The models requests may name, a model still loading among them (requests for it wait): each
   * with its `status` (`ready` or `loading`), an extra field clients that do not know it ignore.
   */
  private listModels(res: ServerResponse): void {
    const data = this.ctx.models
      .list()
      .filter((model) => model.status !== "failed")
      .map((model) => ({
        id: model.id,
        object: "model",
        created: 0,
        owned_by: "spark",
        status: model.status,
      }));
    sendJson(res, 200, { object: "list", data });
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const record = this.ctx.log.http(req, res);
    try {
      checkOrigin(req, this.allowedOrigins);
      const path = (req.url ?? "/").split("?")[0];
      const key = `${req.method} ${path}`;
      const route = Object.hasOwn(this.routes, key) ? this.routes[key] : undefined;
      const isFile = (req.method === "GET" || req.method === "HEAD") && !path?.startsWith("/v1/");
      if (!route && isFile && this.options.staticDir) {
        await serveStatic(req, res, this.options.staticDir);
        return;
      }
      if (!route) {
        const exists = Object.keys(this.routes).some((key) => key.endsWith(` ${path}`));
        throw exists
          ? new SparkError("method_not_allowed", `${req.method} is not allowed on ${path}.`)
          : new SparkError("not_found", `No route for ${req.method} ${path}.`);
      }
      if (path !== "/healthz" && path !== "/health" && !(path === "/metrics" && this.options.metricsPublic))
        checkApiKey(req, this.apiKeys);
      await route(req, res, this.ctx);
    } catch (error) {
      countRefusal(this.ctx.metrics, record, error);
      sendError(res, error);
    }
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // Node hands an upgrade's socket over without an error listener: a peer's reset would be an
    // uncaught exception, on a refused upgrade as much as an accepted one.
    socket.on("error", () => socket.destroy());
    let accept: ((ws: WebSocket) => void) | undefined;
    try {
      checkOrigin(req, this.allowedOrigins);
      const path = (req.url ?? "/").split("?")[0] ?? "/";
      const sockets = this.options.sockets ?? {};
      accept =
        path === "/v1/responses"
          ? (ws) =>
              new ResponsesSocket(ws, this.ctx, {
                key: this.ctx.keyOf(req),
                wire: socket,
                ...(this.options.connectionLifetimeMs !== undefined
                  ? { lifetimeMs: this.options.connectionLifetimeMs }
                  : {}),
              })
          : Object.hasOwn(sockets, path)
            ? sockets[path]
            : undefined;
      if (!accept) throw new SparkError("not_found", `No WebSocket endpoint at ${path}.`);
      checkApiKey(req, this.apiKeys, { subprotocols: true });
      const maxConnections = this.options.maxConnections ?? 256;
      if (this.wss.clients.size >= maxConnections)
        throw new SparkError(
          "server_busy",
          `The server holds ${maxConnections} connections, its most; retry later.`,
        );
    } catch (error) {
      const spark = SparkError.from(error);
      const body = JSON.stringify({ error: spark.toWire() });
      socket.end(
        `HTTP/1.1 ${spark.status} ${spark.code}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      // ws answers a peer's protocol violation (bad UTF-8, an unmasked frame, an oversized
      // payload) with the matching close code (1007, 1002, 1009), then emits `error`: with no
      // listener that error would stop the whole process. Endpoints may add their own listeners.
      ws.on("error", () => {});
      accept?.(ws);
    });
  }

  /** Closes sockets and the listener; idempotent. Models belong to the registry's owner. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ctx.scheduler.close();
    for (const client of this.wss.clients) client.terminate();
    this.wss.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.ctx.store.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
