import type { CreateBody } from "../create-body.js";
import type { ChainStream } from "./chain-stream.js";

/** A way to run responses: a WebSocket connection, or HTTP/SSE requests. */
export interface Transport {
  readonly kind: "websocket" | "http";
  /** Runs the stream's chain; attaches the stream's driver (cancel, steer) at once. */
  start(stream: ChainStream, body: CreateBody): void;
  /** Ends every stream it runs with `client_closed` and lets go of its connections; idempotent. */
  close(): Promise<void>;
}

/** A create that has not gone out yet. */
export interface QueuedCreate {
  stream: ChainStream;
  body: CreateBody;
}
