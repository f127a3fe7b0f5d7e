import type { CreateBody } from "../create-body.js";
import type { DraftAnswer, DraftBody } from "../draft-body.js";
import type { ChainStream } from "./chain-stream.js";

/** A way to run responses: a WebSocket connection, or HTTP/SSE requests. */
export interface Transport {
  readonly kind: "websocket" | "http";
  /**
   * Runs the stream's chain, on the WebSocket lane `streamId` when given (HTTP requests are
   * independent and ignore it); attaches the stream's driver (cancel, steer) at once.
   */
  start(stream: ChainStream, body: CreateBody, streamId?: string): void;
  /** Sends a type-ahead draft if the transport carries them; resolves with how it ended. */
  draft(body: DraftBody): Promise<DraftAnswer>;
  /** Ends every stream it runs with `client_closed` and lets go of its connections; idempotent. */
  close(): Promise<void>;
}

/** A create that has not gone out yet. */
export interface QueuedCreate {
  stream: ChainStream;
  body: CreateBody;
  /** Its WebSocket lane; undefined: the default lane. */
  streamId?: string;
}
