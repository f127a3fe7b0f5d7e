import type { ResponseStreamEvent } from "../../protocol/responses.js";

type TextDelta = Extract<ResponseStreamEvent, { type: "response.output_text.delta" }>;

export interface CoalescerTransport {
  /** Writes one event to the wire. */
  send(event: ResponseStreamEvent): void;
  /** True while the transport still holds unsent bytes. */
  isBusy(): boolean;
  /** Calls back once the transport has room again. */
  whenDrained(callback: () => void): void;
}

/**
 * Sends each text delta at once while the transport is idle, and merges consecutive deltas only
 * while it is busy (a slow client or network): an idle socket never waits, a busy one gets fewer,
 * larger frames instead of a growing queue. Every other event flushes the merged delta first, so
 * order is kept; sequence numbers are stamped at send time and stay gapless.
 */
export class DeltaCoalescer {
  private pending: TextDelta | null = null;
  private waiting = false;

  constructor(private readonly transport: CoalescerTransport) {}

  push(event: ResponseStreamEvent): void {
    if (event.type !== "response.output_text.delta") {
      this.flush();
      this.transport.send(event);
      return;
    }
    const pending = this.pending;
    if (pending && pending.item_id === event.item_id && pending.content_index === event.content_index) {
      pending.delta += event.delta;
      return;
    }
    this.flush();
    if (!this.transport.isBusy()) {
      this.transport.send(event);
      return;
    }
    this.pending = { ...event };
    if (!this.waiting) {
      this.waiting = true;
      this.transport.whenDrained(() => {
        this.waiting = false;
        this.flush();
      });
    }
  }

  /** Sends the merged delta, if any. */
  flush(): void {
    const pending = this.pending;
    if (!pending) return;
    this.pending = null;
    this.transport.send(pending);
  }
}
