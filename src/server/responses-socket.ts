import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";
import type { ChatMessage } from "../protocol/chat.js";
import { SparkError } from "../protocol/errors.js";
import { parseUntrustedJson } from "../protocol/json-guard.js";
import {
  CLIENT_EVENT_SCHEMAS,
  type ClientEventType,
  type ResponseCancelEvent,
  type ResponseCreateEvent,
  type ResponseSteerEvent,
  type SparkDraftEvent,
  streamIdSchema,
} from "../protocol/responses-request.js";
import { validate } from "../protocol/validate.js";
import { ANONYMOUS } from "./admission/request-key.js";
import type { Admission } from "./admission/scheduler.js";
import { contentText } from "./input-conversion.js";
import { DeltaCoalescer, isDelta } from "./internal/delta-coalescer.js";
import { newId } from "./internal/ids.js";
import { newRequestId, type RequestRecord } from "./metrics/request-log.js";
import { prepareResponse } from "./prepare-response.js";
import { type PreparedResponse, ResponseRun } from "./response-run.js";
import { ResponseStore, type StoredResponse } from "./response-store.js";
import { type ServerContext, withSequence } from "./server-context.js";
import {
  type ActiveResponse,
  type LaneEvent,
  MAX_LANES,
  MAX_QUEUED_CREATES,
  type QueuedSteer,
  SocketLane,
} from "./socket-lane.js";
import { prepareDraft, TypeAheadDrafts } from "./type-ahead-drafts.js";

/** A response's place in admission control and its log record. */
interface Turn {
  admission: Admission;
  record: RequestRecord;
}

export interface ResponsesSocketOptions {
  /** The rate-limit and fairness key of the connection's requests. Default: `anonymous`. */
  key?: string;
  /** The id its log lines carry (the upgrade request's). Default: a fresh one. */
  requestId?: string;
  /**
   * The connection's TCP or TLS socket. Events other than text deltas sent within one tick are
   * corked into one write: a response's opening or closing events then cost one syscall and one
   * packet, not one each.
   */
  wire?: Duplex;
  /**
   * How long the connection may live, in ms. Then it is answered `websocket_connection_limit_reached`
   * (as the hosted API does at 60 minutes): waiting creates are refused, running responses finish,
   * and the connection closes (1001, going away). Default: {@link DEFAULT_CONNECTION_LIFETIME_MS}.
   */
  lifetimeMs?: number;
}

/** A Responses WebSocket's lifetime unless configured: the hosted API's 60 minutes. */
export const DEFAULT_CONNECTION_LIFETIME_MS = 60 * 60_000;

/** Unsent bytes beyond which a socket counts as busy and text deltas are merged. */
const BUSY_BYTES = 16 * 1024;

/**
 * One WebSocket connection in Responses WebSocket mode: lanes (`stream_id`) that each run one
 * response at a time (later creates of a lane wait first-in-first-out; the default lane refuses
 * them, as before lanes), `previous_response_id` chaining through a per-connection cache, cancel,
 * and steering that ends the running response at the next token and continues from its live
 * state. The connection ends after its lifetime.
 */
export class ResponsesSocket {
  private sequence = 0;
  /** Responses this connection remembers for `previous_response_id`, even with `store: false`. */
  private readonly cache: ResponseStore;
  /** Lanes with a response running or waiting, by `stream_id` (undefined: the default lane). */
  private readonly lanes = new Map<string | undefined, SocketLane>();
  /** Past its lifetime: no new work; closes once the lanes are idle. */
  private expired = false;
  private readonly lifetime: NodeJS.Timeout;
  /** Output events go through here: deltas are merged only while the socket is backed up. */
  private readonly stream = new DeltaCoalescer({
    send: (event) => this.send(event),
    isBusy: () => this.socket.bufferedAmount > BUSY_BYTES,
    whenDrained: (callback) => this.whenDrained(callback),
  });
  /** Steering input accepted for responses that stopped to wait for tool outputs. */
  private readonly waitingSteers = new Map<string, QueuedSteer[]>();
  private readonly requestId: string;
  private readonly drafts = new TypeAheadDrafts((event) => this.send(event));

  constructor(
    private readonly socket: WebSocket,
    private readonly ctx: ServerContext,
    private readonly connection: ResponsesSocketOptions = {},
  ) {
    this.requestId = connection.requestId ?? newRequestId();
    this.cache = new ResponseStore(ctx.connectionCache);
    this.lifetime = setTimeout(() => this.expire(), connection.lifetimeMs ?? DEFAULT_CONNECTION_LIFETIME_MS);
    // A connection must not keep the process alive for its lifetime.
    this.lifetime.unref();
    socket.on("message", (data, isBinary) => this.onFrame(data as Buffer, isBinary));
    socket.on("close", () => this.onGone());
    socket.on("error", () => this.onGone());
  }

  private onFrame(data: Buffer, isBinary: boolean): void {
    let streamId: string | undefined;
    try {
      if (isBinary) throw new SparkError("invalid_event", "Events are JSON text frames, not binary.");
      if (data.length > this.ctx.json.maxBytes) {
        throw new SparkError(
          "payload_too_large",
          `The event is larger than ${this.ctx.json.maxBytes} bytes.`,
        );
      }
      const raw = parseUntrustedJson(data.toString("utf8"), this.ctx.json);
      streamId = laneOfCreate(raw);
      const type = (raw as { type?: unknown } | null)?.type;
      if (typeof type !== "string" || !Object.hasOwn(CLIENT_EVENT_SCHEMAS, type)) {
        throw new SparkError(
          "unknown_event_type",
          `Unknown event type ${JSON.stringify(type)}; expected one of ${Object.keys(CLIENT_EVENT_SCHEMAS).join(", ")}.`,
          { param: "type" },
        );
      }
      const event = validate(CLIENT_EVENT_SCHEMAS[type as ClientEventType], raw, "invalid_event");
      switch (event.type) {
        case "response.create":
          this.onCreate(event as ResponseCreateEvent);
          break;
        case "response.steer":
          this.onSteer(event as ResponseSteerEvent);
          break;
        case "response.cancel":
        case "response.interrupt":
          this.onCancel(event as ResponseCancelEvent);
          break;
        case "spark.draft":
          this.onDraft(event as SparkDraftEvent);
          break;
        default: {
          const unreachable: never = event;
          throw new Error(`Unhandled event ${JSON.stringify(unreachable)}`);
        }
      }
    } catch (error) {
      this.sendError(error, streamId);
    }
  }

  private onCreate(event: ResponseCreateEvent): void {
    if (this.expired) throw lifetimeReached();
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
      return;
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
    try {
      this.begin(lane, event);
    } finally {
      if (lane.idle) this.lanes.delete(streamId);
    }
  }

  /** Starts a create on its (free) lane; throws when it is refused before it starts. */
  private begin(lane: SocketLane, event: ResponseCreateEvent): void {
    const engine = this.ctx.models.resolve(event.model ?? undefined);
    const previous = event.previous_response_id ?? undefined;
    const queued = previous ? (this.waitingSteers.get(previous) ?? []) : [];
    const prepared = prepareResponse(event, {
      engine,
      lookup: (id) => this.lookup(id),
      generate: event.generate !== false,
      prepend: queued.flatMap((steer) => steer.messages),
    });
    // Refused at once (rate limit, full queue): an error event, and nothing of the request is kept.
    const turn = this.admit(prepared);
    this.drafts.cancel();
    if (previous) this.waitingSteers.delete(previous);
    void this.start(lane, prepared, turn);
  }

  /** After a lane's response (and any successor) ended: the next waiting create, or the lane is let go. */
  private next(lane: SocketLane): void {
    while (!lane.active && lane.queued.length > 0) {
      const event = lane.queued.shift()!;
      try {
        this.begin(lane, event);
      } catch (error) {
        this.sendError(error, lane.streamId);
      }
    }
    if (lane.idle && this.lanes.get(lane.streamId) === lane) this.lanes.delete(lane.streamId);
    this.closeIfExpired();
  }

  private queuedCreates(): number {
    let queued = 0;
    for (const lane of this.lanes.values()) queued += lane.queued.length;
    return queued;
  }

  /** The lane whose running response has this id. */
  private laneRunning(responseId: string): SocketLane | undefined {
    for (const lane of this.lanes.values()) if (lane.active?.run.id === responseId) return lane;
    return undefined;
  }

  /** Enters admission control for a response; throws when refused. */
  private admit(prepared: PreparedResponse): Turn {
    const record = this.ctx.log.socket({ request_id: this.requestId, response_id: prepared.id });
    try {
      const admission = this.ctx.scheduler.enter({
        engine: prepared.engine,
        key: this.connection.key ?? ANONYMOUS,
        record,
      });
      return { admission, record };
    } catch (error) {
      record.fail(error);
      record.end({ status: "rejected" });
      throw error;
    }
  }

  private async start(
    lane: SocketLane,
    prepared: PreparedResponse,
    { admission, record }: Turn,
  ): Promise<void> {
    const metered = { ...prepared, engine: admission.meter(record) };
    const run = new ResponseRun(metered, (event) => this.stream.push(lane.tag(event)), { queue: admission });
    const active: ActiveResponse = { run, steers: [] };
    lane.active = active;
    const outcome = await run.run();
    lane.active = null;
    record.end({ status: outcome.response.status });
    if (!this.continueChain(lane, prepared, outcome.stored, active.steers, admission)) admission.release();
    this.next(lane);
  }

  /**
   * After a response: remembers it, answers the steers it accepted, and starts the steered
   * successor (on the same admission slot: steering continues at once, it does not queue again).
   * True when a successor took the slot over.
   */
  private continueChain(
    lane: SocketLane,
    prepared: PreparedResponse,
    stored: StoredResponse | null,
    steers: QueuedSteer[],
    admission: Admission,
  ): boolean {
    if (stored) {
      this.cache.put(stored);
      if (prepared.settings.store) this.ctx.store.put(stored);
    }
    if (steers.length === 0 || this.socket.readyState !== this.socket.OPEN) return false;

    if (!stored) {
      for (const steer of steers)
        this.steerFailed(lane, steer, "successor_creation_failed", "The response failed.");
    } else if (stored.pendingCalls.length > 0) {
      this.waitingSteers.set(stored.id, steers);
      for (const steer of steers) {
        this.send(
          lane.tag({
            type: "response.steer.pending",
            reason: "waiting_for_required_input",
            required_input: stored.pendingCalls.map((call) => ({
              type: "function_call_output",
              call_id: call.callId,
              name: call.name,
            })),
            steer: { id: steer.id, previous_response_id: steer.previousResponseId },
          }),
        );
      }
    } else {
      // The successor inherits the steered response's settings and continues from its state.
      const successor: PreparedResponse = {
        id: newId("resp"),
        engine: prepared.engine,
        parent: stored,
        input: steers.flatMap((steer) => steer.messages),
        settings: { ...stored.settings, prediction: undefined },
        conversation: stored.conversation,
        generate: true,
      };
      if (admission.held) {
        const record = this.ctx.log.socket({ request_id: this.requestId, response_id: successor.id });
        void this.start(lane, successor, { admission, record });
        return true;
      }
      // Steered while still queued: the successor takes its own place in line.
      try {
        void this.start(lane, successor, this.admit(successor));
      } catch (error) {
        for (const steer of steers)
          this.steerFailed(lane, steer, "successor_creation_failed", SparkError.from(error).message);
      }
    }
    return false;
  }

  private onSteer(event: ResponseSteerEvent): void {
    const target = event.previous_response_id;
    const lane = this.laneRunning(target);
    const active = lane?.active;
    if (this.expired && lane) {
      this.send(
        lane.tag({
          type: "response.steer.failed",
          error: {
            type: "invalid_request_error",
            code: "response_not_active",
            message: "The connection reached its lifetime limit: the response finishes unsteered.",
          },
          steer: { previous_response_id: target, input: event.input },
        }),
      );
      return;
    }
    if (!lane || !active || active.run.cancelled) {
      const known = this.lookup(target) !== undefined || lane !== undefined;
      this.send({
        type: "response.steer.failed",
        error: {
          type: "invalid_request_error",
          code: known ? "response_already_completed" : "response_not_found",
          message: known
            ? `Response ${target} has already completed; send a response.create instead.`
            : `No response ${target} on this connection.`,
        },
        steer: { previous_response_id: target, input: event.input },
        ...(lane?.streamId === undefined ? {} : { stream_id: lane.streamId }),
      });
      return;
    }
    const messages: ChatMessage[] =
      typeof event.input === "string"
        ? [{ role: "user", content: event.input }]
        : event.input.map((message, index) => ({
            role: "user" as const,
            content: contentText(message.content as never, `input[${index}].content`),
          }));
    const steer: QueuedSteer = {
      id: newId("steer"),
      previousResponseId: target,
      input: event.input,
      messages,
    };
    active.steers.push(steer);
    this.send(
      lane.tag({ type: "response.steer.accepted", steer: { id: steer.id, previous_response_id: target } }),
    );
    active.run.abort("steered");
  }

  /**
   * Type-ahead: validated and resolved like the create it anticipates, answered at once with
   * `spark.draft.accepted` (or an `error`), later with `spark.draft.done`.
   */
  private onDraft(event: SparkDraftEvent): void {
    if (this.expired) throw lifetimeReached();
    const engine = this.ctx.models.resolve(event.model ?? undefined);
    const previous = event.previous_response_id ?? undefined;
    const draft = prepareDraft(event, {
      engine,
      lookup: (id) => this.lookup(id),
      prepend: (previous ? (this.waitingSteers.get(previous) ?? []) : []).flatMap((steer) => steer.messages),
    });
    this.send({ type: "spark.draft.accepted", draft_id: draft.id });
    // A response in flight has the model: drafts never run ahead of it.
    if ([...this.lanes.values()].some((lane) => lane.active)) this.drafts.skip(draft, "busy");
    else this.drafts.submit(draft);
  }

  /** Closing the socket cancels every lane's response and drops the creates waiting behind them. */
  private onGone(): void {
    clearTimeout(this.lifetime);
    this.drafts.cancel();
    for (const lane of this.lanes.values()) {
      lane.queued.length = 0;
      lane.active?.run.abort("cancelled");
    }
  }

  /**
   * Cancels the response `response_id` names, else the one running on `stream_id`'s lane (the
   * default lane without either). Creates waiting behind it on its lane still run.
   */
  private onCancel(event: ResponseCancelEvent): void {
    const streamId = event.stream_id ?? undefined;
    const lane = event.response_id ? this.laneRunning(event.response_id) : this.lanes.get(streamId);
    const active = lane?.active;
    if (!lane || !active || (event.stream_id && lane.streamId !== streamId)) {
      throw new SparkError("response_not_active", "There is no response in progress to cancel.", {
        param: event.response_id ? "response_id" : event.stream_id ? "stream_id" : null,
      });
    }
    for (const steer of active.steers.splice(0)) {
      this.steerFailed(lane, steer, "response_not_active", "The response was cancelled.");
    }
    active.run.abort("cancelled");
  }

  /**
   * The lifetime is over: say so (the hosted API's code), refuse the creates still waiting, let the
   * running responses finish, then close.
   */
  private expire(): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    this.expired = true;
    const error = lifetimeReached();
    this.sendError(error);
    this.drafts.cancel();
    for (const lane of [...this.lanes.values()]) {
      for (const _ of lane.queued.splice(0)) this.sendError(error, lane.streamId);
      if (lane.idle) this.lanes.delete(lane.streamId);
    }
    this.closeIfExpired();
  }

  private closeIfExpired(): void {
    if (!this.expired || this.lanes.size > 0 || this.socket.readyState !== this.socket.OPEN) return;
    this.stream.flush();
    // 1001 (going away): a close the SDK counts as recoverable, so a reconnecting client reconnects.
    this.socket.close(1001, "websocket_connection_limit_reached");
  }

  private steerFailed(
    lane: SocketLane,
    steer: QueuedSteer,
    code: "response_not_active" | "successor_creation_failed",
    message: string,
  ): void {
    this.send(
      lane.tag({
        type: "response.steer.failed",
        error: { type: "invalid_request_error", code, message },
        steer: { id: steer.id, previous_response_id: steer.previousResponseId, input: steer.input },
      }),
    );
  }

  /** The ws library has no public drain event; poll briefly while the socket is backed up. */
  private whenDrained(callback: () => void): void {
    const check = () => {
      if (this.socket.readyState !== this.socket.OPEN || this.socket.bufferedAmount <= BUSY_BYTES) callback();
      else setTimeout(check, 2);
    };
    setTimeout(check, 2);
  }

  private lookup(id: string): StoredResponse | undefined {
    return this.cache.get(id) ?? this.ctx.store.get(id);
  }

  private send(event: LaneEvent): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    // Deltas are already one frame per turn (DeltaCoalescer); the events around them come in bursts.
    if (!isDelta(event)) this.corkUntilNextTick();
    this.socket.send(withSequence(event, this.sequence++));
  }

  private corked = false;
  private corkUntilNextTick(): void {
    const wire = this.connection.wire;
    if (!wire || this.corked) return;
    this.corked = true;
    wire.cork();
    process.nextTick(() => {
      this.corked = false;
      wire.uncork();
    });
  }

  /**
   * The one place a WebSocket error becomes a wire event, with the HTTP `status` of its code and
   * the `stream_id` of the lane it is about; the connection stays open.
   */
  private sendError(error: unknown, streamId?: string): void {
    const spark = SparkError.from(error);
    this.send({
      type: "error",
      status: spark.status,
      error: spark.toWire(),
      ...(streamId === undefined ? {} : { stream_id: streamId }),
    });
  }
}

function lifetimeReached(): SparkError {
  return new SparkError(
    "websocket_connection_limit_reached",
    "This WebSocket reached its lifetime limit; open a new connection to continue.",
  );
}

/** A `response.create`'s valid `stream_id`, so that even its refusal is routed to its lane. */
function laneOfCreate(raw: unknown): string | undefined {
  if ((raw as { type?: unknown } | null)?.type !== "response.create") return undefined;
  const parsed = streamIdSchema.safeParse((raw as { stream_id?: unknown }).stream_id);
  return parsed.success ? parsed.data : undefined;
}
