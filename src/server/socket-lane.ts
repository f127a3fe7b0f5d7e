import type { ChatMessage } from "../protocol/chat.js";
import type { ResponseStreamEvent } from "../protocol/responses.js";
import type { ResponseCreateEvent, ResponseSteerEvent } from "../protocol/responses-request.js";
import type { ResponseRun } from "./response-run.js";

/** Lanes of one connection with a response running or waiting; a create for one more is refused. */
export const MAX_LANES = 16;
/** Creates waiting behind a busy lane, all lanes of one connection together. */
export const MAX_QUEUED_CREATES = 16;

/** Steering input accepted for a running response, applied when it stops. */
export interface QueuedSteer {
  id: string;
  previousResponseId: string;
  input: ResponseSteerEvent["input"];
  messages: ChatMessage[];
}

/** The response a lane runs now, with the steers it accepted. */
export interface ActiveResponse {
  run: ResponseRun;
  steers: QueuedSteer[];
}

/** What goes on the wire for a lane: the event, with the lane's `stream_id` when it has one. */
export type LaneEvent = ResponseStreamEvent & { stream_id?: string };

/**
 * One `stream_id` of a Responses WebSocket (or the default lane, `streamId` undefined): one
 * response at a time, later creates first-in-first-out behind it.
 */
export class SocketLane {
  active: ActiveResponse | null = null;
  readonly queued: ResponseCreateEvent[] = [];

  constructor(readonly streamId: string | undefined) {}

  get idle(): boolean {
    return this.active === null && this.queued.length === 0;
  }

  /** The event with this lane's `stream_id` (unchanged on the default lane). */
  tag(event: ResponseStreamEvent): LaneEvent {
    return this.streamId === undefined ? event : { ...event, stream_id: this.streamId };
  }
}
