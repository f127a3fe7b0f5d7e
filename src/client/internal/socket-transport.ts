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

/** The chain of one stream while it occupies the connection. */
interface Wire {
  stream: ChainStream;
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
 * Responses WebSocket mode over one connection. One response chain is on the wire at a time (the
 * protocol's rule); further creates wait their turn here rather than being refused, so a caller
 * that breaks out of one stream can start the next at once. A dropped connection fails the stream
 * on the wire with `connection_lost`; the next create reconnects.
 */
export class SocketTransport implements Transport {
  readonly kind = "websocket";
  private socket: WebSocket | null = null;
  private connecting = false;
  private finished = false;
  private readonly sequence = new SequenceCheck();
  private readonly waiting: QueuedCreate[] = [];
  private wire: Wire | null = null;
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

  start(stream: ChainStream, body: CreateBody): void {
    stream.attach({ cancel: () => this.cancel(stream), steer: (input) => this.steer(stream, input) });
    if (this.finished) {
      stream.fail(new ClientError("client_closed", "The client is closed."));
      return;
    }
    this.waiting.push({ stream, body });
    this.pump();
  }

  /** Sends a draft now if the connection is open (never queued: a later one replaces it anyway). */
  draft(body: DraftBody): Promise<DraftAnswer> {
    const socket = this.socket;
    if (this.finished || socket?.readyState !== WebSocket.OPEN) return Promise.resolve(NOT_SENT);
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
    this.endWire(closed);
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
    this.sequence.reset();
    socket.on("message", (data, isBinary) => {
      if (this.socket === socket) this.onFrame(data, isBinary);
    });
    socket.on("error", () => {}); // a close event always follows
    socket.on("close", () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.endWire(new ClientError("connection_lost", "The WebSocket connection closed mid-response."));
      this.failSteerAcks("connection_lost", "The WebSocket connection closed.");
      this.acks = [];
      this.acceptedSteers.clear();
      this.pump();
    });
  }

  /** Sends the next waiting create when the connection is free, reconnecting if it has to. */
  private pump(): void {
    if (this.wire || this.connecting || this.finished || this.waiting.length === 0) return;
    const socket = this.socket;
    if (socket?.readyState === WebSocket.OPEN) {
      this.send(socket, this.waiting.shift()!);
      return;
    }
    if (socket) return; // still closing: its close event pumps again
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

  private send(socket: WebSocket, { stream, body }: QueuedCreate): void {
    const wire: Wire = {
      stream,
      responseId: null,
      acceptedSteers: new Set(),
      awaitingSuccessor: null,
    };
    this.wire = wire;
    this.notify();
    this.acks.push({ kind: "create", wire });
    const event: Record<string, unknown> = { ...body, type: "response.create" };
    delete event.stream;
    socket.send(JSON.stringify(event));
  }

  private cancel(stream: ChainStream): void {
    const index = this.waiting.findIndex((queued) => queued.stream === stream);
    if (index !== -1) {
      this.waiting.splice(index, 1);
      stream.fail(new ClientError("cancelled", "The response was cancelled before it was sent."));
      return;
    }
    if (this.wire?.stream !== stream) return;
    // Without response_id the server cancels whatever runs on this connection, which can only be
    // this stream's chain, including a successor the client has not heard of yet.
    if (this.socket?.readyState === WebSocket.OPEN)
      this.socket.send(JSON.stringify({ type: "response.cancel" }));
  }

  private async steer(stream: ChainStream, input: string): Promise<SteerOutcome> {
    for (;;) {
      // Closed, or fallen back: a stream handed to another transport is steered there.
      if (this.finished) return stream.steer(input);
      const wire = this.wire;
      const socket = this.socket;
      const queued = this.waiting.some((entry) => entry.stream === stream);
      if (!queued && (wire?.stream !== stream || stream.done || !socket)) {
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
        const movedOn = this.wire === wire && (wire.responseId !== target || wire.awaitingSuccessor !== null);
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
    const wire = this.wire;
    switch (event.type) {
      case "error": {
        const error = ClientError.fromWire(event.error, { status: event.status ?? null });
        // Only a response.cancel is answered with this code: one that raced the end of the response.
        if (error.code === "response_not_active") return;
        const ack = this.acks.shift();
        if (ack?.kind === "steer") {
          ack.resolve({ status: "failed", code: error.code, message: error.message });
        } else if (ack?.kind === "draft") {
          const refused = { code: error.code, message: error.message };
          ack.resolve({ outcome: "failed", prefixTokens: 0, evaluatedTokens: 0, error: refused });
        } else if (ack?.kind === "create") {
          ack.wire.stream.push(event);
          this.endWire(error);
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
          if (wire.awaitingSuccessor && wire.acceptedSteers.size === 0) this.endWire(wire.awaitingSuccessor);
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
      case "response.output_item.added":
      case "response.output_item.done":
      case "response.content_part.added":
      case "response.content_part.done":
      case "response.output_text.delta":
      case "response.output_text.done":
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

  /** Ends the chain on the wire (if any) and frees the connection for the next create. */
  private endWire(result: ResponseObject | ClientError): void {
    const wire = this.wire;
    if (!wire) return;
    this.wire = null;
    this.acks = this.acks.filter((ack) => ack.kind !== "create" || ack.wire !== wire);
    if (result instanceof ClientError) wire.stream.fail(result);
    else wire.stream.complete(result);
    this.notify();
    queueMicrotask(() => this.pump());
  }

  private notify(): void {
    for (const wake of this.changed.splice(0)) wake();
  }

  /** The connection can no longer be trusted: fail the stream on it and drop it. */
  private protocolError(error: ClientError): void {
    this.wire?.stream.fail(error);
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
