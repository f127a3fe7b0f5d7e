import type { ChatMessage } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
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
  /** A create's chain is being read from the response store; the lane is taken meanwhile. */
  resolving = false;

  constructor(readonly streamId: string | undefined) {}

  get idle(): boolean {
    return this.active === null && this.queued.length === 0 && !this.resolving;
  }

  /** The event with this lane's `stream_id` (unchanged on the default lane). */
  tag(event: ResponseStreamEvent): LaneEvent {
    return this.streamId === undefined ? event : { ...event, stream_id: this.streamId };
  }
}

/** One connection's lanes with a response running or waiting, by `stream_id`. */
export class SocketLanes {
  private readonly lanes = new Map<string | undefined, SocketLane>();

  get size(): number {
    return this.lanes.size;
  }

  /** True while a lane runs a response. */
  get running(): boolean {
    return [...this.lanes.values()].some((lane) => lane.active);
  }

  all(): SocketLane[] {
    return [...this.lanes.values()];
  }

  get(streamId: string | undefined): SocketLane | undefined {
    return this.lanes.get(streamId);
  }

  /** The lane whose running response has this id. */
  runningResponse(responseId: string): SocketLane | undefined {
    for (const lane of this.lanes.values()) if (lane.active?.run.id === responseId) return lane;
    return undefined;
  }

  /**
   * Where a create goes: a new lane to start it on, or undefined when it now waits behind its busy
   * lane. Throws when the default lane is busy (it refuses waiting creates) or no room is left.
   */
  place(event: ResponseCreateEvent): SocketLane | undefined {
    const streamId = event.stream_id ?? undefined;
    const busy = this.lanes.get(streamId);
    if (busy) {
      if (streamId === undefined) {
        const running = busy.active ? `Response ${busy.active.run.id} is` : "A response is";
        throw new SparkError("response_in_progress", `${running} still in progress on this connection.`);
      }
      if (this.queuedCreates() >= MAX_QUEUED_CREATES) {
        throw new SparkError(
          "limit_reached",
          `${MAX_QUEUED_CREATES} creates already wait behind busy lanes of this connection, the most.`,
          { param: "stream_id" },
        );
      }
      busy.queued.push(event);
      return undefined;
    }
    if (this.lanes.size >= MAX_LANES) {
      throw new SparkError(
        "limit_reached",
        `${MAX_LANES} lanes of this connection are busy, the most; wait for one to finish or use a busy lane.`,
        { param: "stream_id" },
      );
    }
    const lane = new SocketLane(streamId);
    this.lanes.set(streamId, lane);
    return lane;
  }

  /** Lets the lane go once it is idle. */
  release(lane: SocketLane): void {
    if (lane.idle && this.lanes.get(lane.streamId) === lane) this.lanes.delete(lane.streamId);
  }

  private queuedCreates(): number {
    let queued = 0;
    for (const lane of this.lanes.values()) queued += lane.queued.length;
    return queued;
  }
}
