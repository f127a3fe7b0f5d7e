import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";
import { SparkError } from "../protocol/errors.js";
import type {
  ResponseCancelEvent,
  ResponseCreateEvent,
  ResponseSteerEvent,
  SparkDraftEvent,
} from "../protocol/responses-request.js";
import { ANONYMOUS } from "./admission/request-key.js";
import type { Admission } from "./admission/scheduler.js";
import { DeltaCoalescer } from "./internal/delta-coalescer.js";
import { newRequestId, type RequestRecord } from "./metrics/request-log.js";
import { prepareResponse } from "./prepare-response.js";
import { type PreparedResponse, ResponseRun } from "./response-run.js";
import type { StoredResponse } from "./response-store.js";
import { keepResponse, type ServerContext } from "./server-context.js";
import { clientEventOf, laneOfCreate, parseFrame } from "./socket-frames.js";
import {
  type ActiveResponse,
  type LaneEvent,
  type QueuedSteer,
  type SocketLane,
  SocketLanes,
} from "./socket-lane.js";
import { SocketSender } from "./socket-sender.js";
import { queuedSteer, steerFailed, steerPending, successorOf } from "./socket-steering.js";
import { ResponseCache } from "./store/response-cache.js";
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
  /** The connection's TCP or TLS socket: see {@link SocketSender}. */
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

/**
 * One WebSocket connection in Responses WebSocket mode: lanes (`stream_id`) that each run one
 * response at a time (later creates of a lane wait first-in-first-out; the default lane refuses
 * them, as before lanes), `previous_response_id` chaining through a per-connection cache, cancel,
 * and steering that ends the running response at the next token and continues from its live
 * state. The connection ends after its lifetime.
 */
export class ResponsesSocket {
  /** Responses this connection remembers for `previous_response_id`, even with `store: false`. */
  private readonly cache: ResponseCache;
  /** Lanes with a response running or waiting, by `stream_id` (undefined: the default lane). */
  private readonly lanes = new SocketLanes();
  /** Past its lifetime: no new work; closes once the lanes are idle. */
  private expired = false;
  private readonly lifetime: NodeJS.Timeout;
  private readonly sender: SocketSender;
  /** Output events go through here: deltas are merged only while the socket is backed up. */
  private readonly stream: DeltaCoalescer;
  /** Steering input accepted for responses that stopped to wait for tool outputs. */
  private readonly waitingSteers = new Map<string, QueuedSteer[]>();
  private readonly requestId: string;
  private readonly drafts = new TypeAheadDrafts((event) => this.send(event));
  /** Drafts waiting for their chain from the response store, in order; null when none. */
  private drafting: Promise<void> | null = null;

  constructor(
    private readonly socket: WebSocket,
    private readonly ctx: ServerContext,
    private readonly connection: ResponsesSocketOptions = {},
  ) {
    this.requestId = connection.requestId ?? newRequestId();
    this.sender = new SocketSender(socket, connection.wire);
    this.stream = new DeltaCoalescer(this.sender);
    this.cache = new ResponseCache(ctx.connectionCache);
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
      const raw = parseFrame(data, isBinary, this.ctx.json);
      streamId = laneOfCreate(raw);
      const event = clientEventOf(raw);
      switch (event.type) {
        case "response.create":
          this.onCreate(event);
          break;
        case "response.steer":
          this.onSteer(event);
          break;
        case "response.cancel":
        case "response.interrupt":
          this.onCancel(event);
          break;
        case "spark.draft":
          this.onDraft(event);
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
    const lane = this.lanes.place(event);
    if (lane) this.launch(lane, event);
  }

  /**
   * Starts a create on its (free) lane once its chain is known: from this connection's cache at
   * once, else from the response store (the lane stays taken meanwhile). A create refused before it
   * starts is answered with an error on its lane, which goes on with its next create.
   */
  private launch(lane: SocketLane, event: ResponseCreateEvent): void {
    const previous = event.previous_response_id ?? undefined;
    if (!previous || this.cache.get(previous)) {
      this.beginOrNext(lane, event, undefined);
      return;
    }
    lane.resolving = true;
    this.ctx.store.get(previous).then(
      (stored) => {
        lane.resolving = false;
        // Closed meanwhile: nothing runs for nobody (onGone already dropped the lane's queue).
        if (this.socket.readyState !== this.socket.OPEN) this.next(lane);
        else this.beginOrNext(lane, event, stored ?? null);
      },
      (error: unknown) => {
        lane.resolving = false;
        this.sendError(error, lane.streamId);
        this.next(lane);
      },
    );
  }

  private beginOrNext(
    lane: SocketLane,
    event: ResponseCreateEvent,
    fetched: StoredResponse | null | undefined,
  ): void {
    try {
      this.begin(lane, event, fetched);
    } catch (error) {
      this.sendError(error, lane.streamId);
    }
    if (!lane.active) this.next(lane);
  }

  /**
   * Starts a create on its lane with its chain (`fetched` from the store, or undefined: from this
   * connection's cache); throws when it is refused before it starts.
   */
  private begin(
    lane: SocketLane,
    event: ResponseCreateEvent,
    fetched: StoredResponse | null | undefined,
  ): void {
    const engine = this.ctx.models.resolve(event.model ?? undefined);
    const previous = event.previous_response_id ?? undefined;
    const queued = previous ? (this.waitingSteers.get(previous) ?? []) : [];
    const prepared = prepareResponse(event, {
      engine,
      lookup: (id) => this.cache.get(id) ?? fetched ?? undefined,
      ranHere: (id) => !this.ctx.store.shared || this.ctx.ranHere.has(id),
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
    const event = lane.active || lane.resolving ? undefined : lane.queued.shift();
    if (event) {
      this.launch(lane, event);
      return;
    }
    this.lanes.release(lane);
    this.closeIfExpired();
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
      // The connection goes on from its cache at once; the store (shared by other servers, maybe)
      // gets it just after. A store that fails is reported on the lane; the chain goes on here.
      keepResponse(this.ctx, prepared.settings, stored).catch((error: unknown) => {
        if (this.socket.readyState === this.socket.OPEN) this.sendError(error, lane.streamId);
      });
    }
    if (steers.length === 0 || this.socket.readyState !== this.socket.OPEN) return false;

    if (!stored) {
      for (const steer of steers)
        this.send(lane.tag(steerFailed(steer, "successor_creation_failed", "The response failed.")));
    } else if (stored.pendingCalls.length > 0) {
      this.waitingSteers.set(stored.id, steers);
      for (const steer of steers) this.send(lane.tag(steerPending(stored, steer)));
    } else {
      const successor = successorOf(prepared, stored, steers);
      if (admission.held) {
        const record = this.ctx.log.socket({ request_id: this.requestId, response_id: successor.id });
        void this.start(lane, successor, { admission, record });
        return true;
      }
      // Steered while still queued: the successor takes its own place in line.
      try {
        void this.start(lane, successor, this.admit(successor));
      } catch (error) {
        const message = SparkError.from(error).message;
        for (const steer of steers)
          this.send(lane.tag(steerFailed(steer, "successor_creation_failed", message)));
      }
    }
    return false;
  }

  private onSteer(event: ResponseSteerEvent): void {
    const target = event.previous_response_id;
    const lane = this.lanes.runningResponse(target);
    const active = lane?.active;
    const refused = { previousResponseId: target, input: event.input };
    if (this.expired && lane) {
      const message = "The connection reached its lifetime limit: the response finishes unsteered.";
      this.send(lane.tag(steerFailed(refused, "response_not_active", message)));
      return;
    }
    if (!lane || !active?.run.steerable) {
      const known = this.cache.get(target) !== undefined || lane !== undefined;
      const failed = known
        ? steerFailed(
            refused,
            "response_already_completed",
            `Response ${target} has already completed; send a response.create instead.`,
          )
        : steerFailed(refused, "response_not_found", `No response ${target} on this connection.`);
      this.send(lane ? lane.tag(failed) : failed);
      return;
    }
    const steer = queuedSteer(event);
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
    const previous = event.previous_response_id ?? undefined;
    if (!this.drafting && (!previous || this.cache.get(previous))) {
      this.draftWith(event, undefined);
      return;
    }
    // The chain comes from the response store: drafts keep their order behind it.
    const fetched = previous ? this.ctx.store.get(previous) : Promise.resolve(undefined);
    const drafting: Promise<void> = (this.drafting ?? Promise.resolve())
      .then(() => fetched)
      .then((stored) => this.draftWith(event, stored ?? null))
      .catch((error: unknown) => this.sendError(error))
      .finally(() => {
        if (this.drafting === drafting) this.drafting = null;
      });
    this.drafting = drafting;
  }

  private draftWith(event: SparkDraftEvent, fetched: StoredResponse | null | undefined): void {
    const engine = this.ctx.models.resolve(event.model ?? undefined);
    const previous = event.previous_response_id ?? undefined;
    const draft = prepareDraft(event, {
      engine,
      lookup: (id) => this.cache.get(id) ?? fetched ?? undefined,
      prepend: (previous ? (this.waitingSteers.get(previous) ?? []) : []).flatMap((steer) => steer.messages),
    });
    this.send({ type: "spark.draft.accepted", draft_id: draft.id });
    // A response in flight has the model: drafts never run ahead of it.
    if (this.lanes.running) this.drafts.skip(draft, "busy");
    else this.drafts.submit(draft);
  }

  /** Closing the socket cancels every lane's response and drops the creates waiting behind them. */
  private onGone(): void {
    clearTimeout(this.lifetime);
    this.drafts.cancel();
    for (const lane of this.lanes.all()) {
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
    const lane = event.response_id ? this.lanes.runningResponse(event.response_id) : this.lanes.get(streamId);
    const active = lane?.active;
    if (!lane || !active || (event.stream_id && lane.streamId !== streamId)) {
      throw new SparkError("response_not_active", "There is no response in progress to cancel.", {
        param: event.response_id ? "response_id" : event.stream_id ? "stream_id" : null,
      });
    }
    for (const steer of active.steers.splice(0)) {
      this.send(lane.tag(steerFailed(steer, "response_not_active", "The response was cancelled.")));
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
    for (const lane of this.lanes.all()) {
      for (const _ of lane.queued.splice(0)) this.sendError(error, lane.streamId);
      this.lanes.release(lane);
    }
    this.closeIfExpired();
  }

  private closeIfExpired(): void {
    if (!this.expired || this.lanes.size > 0 || this.socket.readyState !== this.socket.OPEN) return;
    this.stream.flush();
    // 1001 (going away): a close the SDK counts as recoverable, so a reconnecting client reconnects.
    this.socket.close(1001, "websocket_connection_limit_reached");
  }

  private send(event: LaneEvent): void {
    this.sender.send(event);
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
