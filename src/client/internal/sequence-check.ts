import { ClientError } from "../client-error.js";

/**
 * Checks that `sequence_number`s run 0, 1, 2, ... without gaps or repeats (per WebSocket connection,
 * per HTTP request). Events without one (servers that do not number) are not checked.
 */
export class SequenceCheck {
  private last: number | null = null;

  /** The last number seen, or -1 before any. */
  get lastSeen(): number {
    return this.last ?? -1;
  }

  /** Records the event's number; returns the protocol error when it is out of order. */
  check(event: { type: string; sequence_number?: unknown }): ClientError | null {
    const sequence = event.sequence_number;
    if (typeof sequence !== "number") return null;
    const expected = (this.last ?? -1) + 1;
    if (sequence !== expected) {
      return new ClientError(
        "protocol_error",
        `Event ${event.type} has sequence_number ${sequence}; expected ${expected} (a ${sequence < expected ? "repeat" : "gap"}).`,
      );
    }
    this.last = sequence;
    return null;
  }

  reset(): void {
    this.last = null;
  }
}
