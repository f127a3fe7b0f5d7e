import type { ResponseStreamEvent } from "../../protocol/responses.js";

/** Deltas that append to one item's text: answer text, reasoning text, function call arguments. */
type Delta = Extract<
  ResponseStreamEvent,
  {
    type:
      | "response.output_text.delta"
      | "response.reasoning_text.delta"
      | "response.function_call_arguments.delta";
  }
>;

export function isDelta(event: ResponseStreamEvent): event is Delta {
  return (
    event.type === "response.output_text.delta" ||
    event.type === "response.reasoning_text.delta" ||
    event.type === "response.function_call_arguments.delta"
  );
}

export interface CoalescerTransport {
  /** Writes one event to the wire. */
  send(event: ResponseStreamEvent): void;
  /** True while the transport still holds unsent bytes. */
  isBusy(): boolean;
  /** Calls back once the transport has room again. */
  whenDrained(callback: () => void): void;
}

/**
 * Merges the deltas (text, reasoning, call arguments) produced within one turn of the event loop
 * into one frame, sent as soon as that turn ends (a model producing one token per forward pass is never delayed; an engine
 * emitting a burst costs one write instead of one per token — measured: per-delta writes made
 * WebSocket streaming cost 2.4x the CPU of SSE, whose HTTP layer batches writes of a tick). While
 * the transport is backed up (a slow client), deltas keep merging until it drains. Every other
 * event flushes the merged delta first, so order is kept; sequence numbers are stamped at send
 * time and stay gapless.
 */
export class DeltaCoalescer {
  private pending: Delta | null = null;
  private scheduled = false;

  constructor(private readonly transport: CoalescerTransport) {}

  push(event: ResponseStreamEvent): void {
    if (!isDelta(event)) {
      this.flush();
      this.transport.send(event);
      return;
    }
    const pending = this.pending;
    // Each item Spark streams has one content part, so type and item name the text a delta extends.
    if (pending && pending.type === event.type && pending.item_id === event.item_id) {
      pending.delta += event.delta;
      return;
    }
    this.flush();
    this.pending = { ...event };
    this.schedule();
  }

  /** Sends the merged delta, if any. */
  flush(): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    this.transport.send(pending);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.sendWhenReady());
  }

  private sendWhenReady(): void {
    if (this.transport.isBusy()) {
      this.transport.whenDrained(() => this.sendWhenReady());
      return;
    }
    this.scheduled = false;
    this.flush();
  }
}
