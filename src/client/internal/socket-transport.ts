import WebSocket from "ws";
import type { ResponseObject } from "../../protocol/responses.js";
import { ClientError } from "../client-error.js";
import type { CreateBody } from "../create-body.js";
import { type DraftAnswer, type DraftBody, NOT_SENT } from "../draft-body.js";
import type { ServerEvent } from "../response-stream.js";
import type { SteerOutcome } from "../steer-outcome.js";
import type { ChainStream } from "./chain-stream.js";
import { openWebSocket } from "./open-web-socket.js";
import { SequenceCheck } from "./sequence-check.js";
import type { QueuedCreate, Transport } from "./transport.js";

export interface SocketTransportOptions {
  url: string;
  headers: Record<string, string>;
  connectTimeoutMs: number;
  /**
   * A reconnect failed: the transport is finished, and these creates (not sent yet) are handed
   * back to run another way.
   */
  onUnavailable: (reason: string, queued: QueuedCreate[]) => void;
}

/** The chain of one stream while it occupies its lane of the connection. */
interface Wire {
  stream: ChainStream;
  /** What was sent, so a create the server refused at its lifetime cap goes again on the next connection. */
  queued: QueuedCreate;
  /** The server's response now running for it; null until `response.created`. */
  responseId: string | null;
  /** Steers the server accepted for the running response and has not yet resolved. */
  acceptedSteers: Set<string>;
  /** The terminal response of a steered response whose successor (or steer.pending) is due. */
  awaitingSuccessor: ResponseObject | null;
}

/**
 * The answer due for a client event, in send order: the server answers `response.create` and
 * `response.steer` synchronously and in order, so the first unanswered one owns the next
 * `response.created` / steer answer / `error`.
 */
type Ack =
  | { kind: "create"; wire: Wire }
  | { kind: "steer"; resolve: (outcome: SteerOutcome) => void }
  | { kind: "draft"; resolve: (answer: DraftAnswer) => void };

/**
 * Responses WebSocket mode over one connection. One response chain is on the wire per lane
 * (`stream_id`; creates without one use the default lane), lanes side by side; further creates of a
 * lane wait their turn here rather than being refused, so a caller that breaks out of one stream
 * can start the next at once. A dropped connection fails the streams on the wire with
 * `connection_lost`; the next create reconnects. At the server's lifetime cap
 * (`websocket_connection_limit_reached`) nothing new is sent on the old connection: running
 * streams finish, refused creates wait, and the next connection takes them.
 */
export class SocketTransport implements Transport {
  readonly kind = "websocket";
  private socket: WebSocket | null = null;
  private connecting = false;
  private finished = false;
  private readonly sequence = new SequenceCheck();
  private readonly waiting: QueuedCreate[] = [];
  /** The chain on the wire, per lane. */
  private readonly wires = new Map<string | undefined, Wire>();
  /** The server said the connection reached its lifetime: send nothing more on it. */
  private expiring = false;
  private acks: Ack[] = [];
  /**
   * Steers the server accepted on this connection and has not resolved: their later
   * `steer.pending` / `steer.failed` (which carry the id) are news, not answers to a steer frame.
   */
  private readonly acceptedSteers = new Set<string>();
  /** Drafts the server accepted, by id, until their `spark.draft.done`. */
  private readonly drafts = new Map<string, (answer: DraftAnswer) => void>();
  /** Woken whenever a wire starts or ends, or its response changes (steers wait on this). */
  private changed: (() => void)[] = [];

  constructor(
    socket: WebSocket,
    private readonly options: SocketTransportOptions,
  ) {
    this.adopt(socket);
  }

  start(stream: ChainStream, body: CreateBody, streamId?: string): void {
    stream.attach({ cancel: () => this.cancel(stream), steer: (input) => this.steer(stream, input) });
    if (this.finished) {
      stream.fail(new ClientError("client_closed", "The client is closed."));
      return;
    }
    this.waiting.push({ stream, body, ...(streamId === undefined ? {} : { streamId }) });
    this.pump();
  }

  /** Sends a draft now if the connection is open (never queued: a later one replaces it anyway). */
  draft(body: DraftBody): Promise<DraftAnswer> {
    const socket = this.socket;
    if (this.finished || this.expiring || socket?.readyState !== WebSocket.OPEN)
      return Promise.resolve(NOT_SENT);
    return new Promise((resolve) => {
      this.acks.push({ kind: "draft", resolve });
      socket.send(JSON.stringify({ ...body, type: "spark.draft" }));
    });
  }

  async close(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    const closed = new ClientError("client_closed", "The client was closed.");
    for (const queued of this.waiting.splice(0)) queued.stream.fail(closed);
    for (const wire of [...this.wires.values()]) this.endWire(wire, closed);
    this.failSteerAcks("client_closed", "The client was closed.");
    this.notify();
    const socket = this.socket;
    this.socket = null;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => socket.terminate(), 1000);
      socket.once("close", () => {
        clearTimeout(timer);
        resolve();
      });
      socket.close(1000);
    });
  }

  private adopt(socket: WebSocket): void {
    this.socket = socket;
    this.expiring = false;
    this.sequence.reset();
    socket.on("message", (data, isBinary) => {
      if (this.socket === socket) this.onFrame(data, isBinary);
    });
    socket.on("error", () => {}); // a close event always follows
    socket.on("close", () => {
      if (this.socket !== socket) return;
      this.socket = null;
      const lost = new ClientError("connection_lost", "The WebSocket connection closed mid-response.");
      for (const wire of [...this.wires.values()]) this.endWire(wire, lost);
      this.failSteerAcks("connection_lost", "The WebSocket connection closed.");
      this.acks = [];
      this.acceptedSteers.clear();
      this.pump();
    });
  }

  /** Sends each waiting create whose lane is free, reconnecting if it has to. */
  private pump(): void {
    if (this.connecting || this.finished) return;
    const socket = this.socket;
    if (socket && this.expiring) {
      // Past its lifetime: once its last stream ended, make way for a new connection.
      if (this.wires.size === 0 && socket.readyState === WebSocket.OPEN) socket.close(1000);
      return;
    }
    if (socket?.readyState === WebSocket.OPEN) {
      for (const queued of [...this.waiting]) {
        if (this.wires.has(queued.streamId)) continue;
        this.waiting.splice(this.waiting.indexOf(queued), 1);
        this.send(socket, queued);
      }
      return;
    }
    if (this.waiting.length === 0 || socket) return; // nothing to send, or still closing: its close event pumps again
    this.connecting = true;
    void openWebSocket(this.options.url, {
      headers: this.options.headers,
      timeoutMs: this.options.connectTimeoutMs,
    }).then((result) => {
      this.connecting = false;
      if (this.finished) {
        if (result.ok) result.socket.terminate();
        return;
      }
      if (!result.ok) {
        this.finished = true;
        this.options.onUnavailable(result.reason, this.waiting.splice(0));
        this.notify();
        return;
      }
      this.adopt(result.socket);
      this.pump();
    });
  }

  private send(socket: WebSocket, queued: QueuedCreate): void {
    const wire: Wire = {
      stream: queued.stream,
      queued,
      responseId: null,
      acceptedSteers: new Set(),
      awaitingSuccessor: null,
    };
    this.wires.set(queued.streamId, wire);
    this.notify();
    this.acks.push({ kind: "create", wire });
    const event: Record<string, unknown> = { ...queued.body, type: "response.create" };
    delete event.stream;
    if (queued.streamId !== undefined) event.stream_id = queued.streamId;
    socket.send(JSON.stringify(event));
  }

  private wireOf(stream: ChainStream): Wire | undefined {
    for (const wire of this.wires.values()) if (wire.stream === stream) return wire;
    return undefined;
  }

  private cancel(stream: ChainStream): void {
    const index = this.waiting.findIndex((queued) => queued.stream === stream);
    if (index !== -1) {
      this.waiting.splice(index, 1);
      stream.fail(new ClientError("cancelled", "The response was cancelled before it was sent."));
      return;
    }
    const wire = this.wireOf(stream);
    if (!wire) return;
    // Without response_id the server cancels whatever runs on the lane, which can only be this
    // stream's chain, including a successor the client has not heard of yet.
    if (this.socket?.readyState === WebSocket.OPEN) {
      const lane = wire.queued.streamId === undefined ? {} : { stream_id: wire.queued.streamId };
      this.socket.send(JSON.stringify({ type: "response.cancel", ...lane }));
    }
  }

  private async steer(stream: ChainStream, input: string): Promise<SteerOutcome> {
    for (;;) {
      // Closed, or fallen back: a stream handed to another transport is steered there.
      if (this.finished) return stream.steer(input);
      const wire = this.wireOf(stream);
      const socket = this.socket;
      const queued = this.waiting.some((entry) => entry.stream === stream);
      if (!queued && (!wire || stream.done || !socket)) {
        return {
          status: "failed",
          code: "response_already_completed",
          message: "The response has already ended.",
        };
      }
      if (!queued && wire && socket && wire.responseId && !wire.awaitingSuccessor) {
        const target = wire.responseId;
        const { promise, resolve } = outcome();
        this.acks.push({ kind: "steer", resolve });
        socket.send(JSON.stringify({ type: "response.steer", previous_response_id: target, input }));
        const result = await promise;
        // The response ended (steered by an earlier steer) while this one was on its way: the
        // chain goes on in a successor, so steer that instead.
        const movedOn =
          this.wireOf(stream) === wire && (wire.responseId !== target || wire.awaitingSuccessor !== null);
        if (result.status === "failed" && result.code === "response_already_completed" && movedOn) continue;
        return result;
      }
      // Still queued, not created yet, or between a steered response and its successor: steer
      // the response to come.
      await new Promise<void>((resolve) => this.changed.push(resolve));
    }
  }

  private onFrame(data: WebSocket.RawData, isBinary: boolean): void {
    let event: ServerEvent;
    try {
      if (isBinary) throw new Error("a binary frame");
      event = JSON.parse(frameText(data)) as ServerEvent;
      if (typeof event?.type !== "string") throw new Error("an event without a type");
    } catch (error) {
      this.protocolError(
        new ClientError("protocol_error", `The server sent ${(error as Error).message}.`, { cause: error }),
      );
      return;
    }
    const outOfOrder = this.sequence.check(event);
    if (outOfOrder) {
      this.protocolError(outOfOrder);
      return;
    }
    this.route(event);
  }

  private route(event: ServerEvent): void {
    const wire = this.wires.get(event.stream_id);
    switch (event.type) {
      case "error": {
        const error = ClientError.fromWire(event.error, { status: event.status ?? null });
        // Only a response.cancel is answered with this code: one that raced the end of the response.
        if (error.code === "response_not_active") return;
        if (error.code === "websocket_connection_limit_reached") {
          this.onLifetimeReached();
          return;
        }
        const ack = this.acks.shift();
        if (ack?.kind === "steer") {
          ack.resolve({ status: "failed", code: error.code, message: error.message });
        } else if (ack?.kind === "draft") {
          const refused = { code: error.code, message: error.message };
          ack.resolve({ outcome: "failed", prefixTokens: 0, evaluatedTokens: 0, error: refused });
        } else if (ack?.kind === "create") {
          ack.wire.stream.push(event);
          this.endWire(ack.wire, error);
        } else if (wire) {
          // An error about the running response: fail the stream now, free the wire at its end.
          wire.stream.push(event);
          wire.stream.fail(error);
          this.cancel(wire.stream);
        }
        return;
      }
      case "response.created": {
        if (!wire) {
          this.protocolError(
            new ClientError("protocol_error", "The server created a response nobody asked for."),
          );
          return;
        }
        if (wire.awaitingSuccessor) {
          wire.awaitingSuccessor = null;
          wire.acceptedSteers.clear();
        } else if (this.acks[0]?.kind === "create" && this.acks[0].wire === wire) {
          this.acks.shift();
        } else {
          this.protocolError(
            new ClientError("protocol_error", "The server created a response nobody asked for."),
          );
          return;
        }
        wire.responseId = event.response.id;
        wire.stream.push(event);
        this.notify();
        return;
      }
      case "response.completed":
      case "response.incomplete":
      case "response.failed": {
        if (!wire) return;
        wire.stream.push(event);
        if (event.type !== "response.failed" && wire.acceptedSteers.size > 0) {
          wire.awaitingSuccessor = event.response;
          this.notify();
          return;
        }
        this.endWire(
          wire,
          event.type === "response.failed"
            ? ClientError.fromWire(event.response.error, { response: event.response })
            : event.response,
        );
        return;
      }
      case "response.steer.accepted": {
        const ack = this.acks[0]?.kind === "steer" ? this.acks.shift() : undefined;
        if (ack?.kind === "steer") ack.resolve({ status: "accepted", id: event.steer.id });
        this.acceptedSteers.add(event.steer.id);
        wire?.acceptedSteers.add(event.steer.id);
        wire?.stream.push(event);
        return;
      }
      case "response.steer.pending":
      case "response.steer.failed": {
        const id = event.steer.id;
        if (id !== undefined && this.acceptedSteers.delete(id)) {
          if (!wire?.acceptedSteers.delete(id)) return; // about a chain that already ended
          wire.stream.push(event);
          if (wire.awaitingSuccessor && wire.acceptedSteers.size === 0)
            this.endWire(wire, wire.awaitingSuccessor);
          return;
        }
        const ack = this.acks[0]?.kind === "steer" ? this.acks.shift() : undefined;
        if (ack?.kind !== "steer") return;
        ack.resolve(
          event.type === "response.steer.pending"
            ? { status: "pending", requiredInput: event.required_input }
            : { status: "failed", code: event.error.code, message: event.error.message },
        );
        return;
      }
      case "spark.draft.accepted": {
        const ack = this.acks[0]?.kind === "draft" ? this.acks.shift() : undefined;
        if (ack?.kind === "draft") this.drafts.set(event.draft_id, ack.resolve);
        return;
      }
      case "spark.draft.done": {
        const resolve = this.drafts.get(event.draft_id);
        this.drafts.delete(event.draft_id);
        resolve?.({
          outcome: event.outcome,
          prefixTokens: event.prefix_tokens,
          evaluatedTokens: event.evaluated_tokens,
          ...(event.error ? { error: { code: event.error.code, message: event.error.message } } : {}),
        });
        return;
      }
      case "response.in_progress":
      case "response.queued":
      case "response.prefill.progress":
      case "response.output_item.added":
      case "response.output_item.done":
      case "response.content_part.added":
      case "response.content_part.done":
      case "response.output_text.delta":
      case "response.output_text.done":
      case "response.reasoning_text.delta":
      case "response.reasoning_text.done":
      case "response.function_call_arguments.delta":
      case "response.function_call_arguments.done":
        wire?.stream.push(event);
        return;
      default: {
        // Other servers' event types reach the consumer as they are.
        const other: never = event;
        wire?.stream.push(other);
      }
    }
  }

  /**
   * The server will close this connection once its running responses end. A create it refused for
   * that is not lost: it waits again, first in line, for the next connection; a draft is not sent.
   */
  private onLifetimeReached(): void {
    this.expiring = true;
    const ack = this.acks[0];
    if (ack?.kind === "create" && ack.wire.responseId === null) {
      this.acks.shift();
      this.wires.delete(ack.wire.queued.streamId);
      this.waiting.unshift(ack.wire.queued);
    } else if (ack?.kind === "draft") {
      this.acks.shift();
      ack.resolve(NOT_SENT);
    }
    this.notify();
    this.pump();
  }

  /** Ends the chain on a lane and frees the lane for its next create. */
  private endWire(wire: Wire, result: ResponseObject | ClientError): void {
    if (this.wires.get(wire.queued.streamId) !== wire) return;
    this.wires.delete(wire.queued.streamId);
    this.acks = this.acks.filter((ack) => ack.kind !== "create" || ack.wire !== wire);
    if (result instanceof ClientError) wire.stream.fail(result);
    else wire.stream.complete(result);
    this.notify();
    queueMicrotask(() => this.pump());
  }

  private notify(): void {
    for (const wake of this.changed.splice(0)) wake();
  }

  /** The connection can no longer be trusted: fail the streams on it and drop it. */
  private protocolError(error: ClientError): void {
    for (const wire of this.wires.values()) wire.stream.fail(error);
    this.socket?.terminate();
  }

  private failSteerAcks(code: string, message: string): void {
    for (const ack of this.acks) if (ack.kind === "steer") ack.resolve({ status: "failed", code, message });
    this.acks = this.acks.filter((ack) => ack.kind !== "steer");
    // Drafts end with the connection: the server cancels them when it closes.
    const cancelled: DraftAnswer = { outcome: "cancelled", prefixTokens: 0, evaluatedTokens: 0 };
    for (const ack of this.acks) if (ack.kind === "draft") ack.resolve(cancelled);
    this.acks = this.acks.filter((ack) => ack.kind !== "draft");
    for (const resolve of this.drafts.values()) resolve(cancelled);
    this.drafts.clear();
  }
}

function outcome(): { promise: Promise<SteerOutcome>; resolve: (outcome: SteerOutcome) => void } {
  let resolve!: (outcome: SteerOutcome) => void;
  const promise = new Promise<SteerOutcome>((res) => {
    resolve = res;
  });
  return { promise, resolve };
}

function frameText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString("utf8");
  return data.toString("utf8");
}
