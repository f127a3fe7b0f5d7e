import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";
import { type CoalescerTransport, isDelta } from "./internal/delta-coalescer.js";
import { withSequence } from "./server-context.js";
import type { LaneEvent } from "./socket-lane.js";

/** Unsent bytes beyond which a socket counts as busy and text deltas are merged. */
const BUSY_BYTES = 16 * 1024;

/**
 * Writes one Responses WebSocket's events: sequence numbers stamped at send time (gapless), the
 * events around the deltas corked into one write per tick, and the backlog of a slow client
 * watched through each frame's write callback (no timer polls it).
 */
export class SocketSender implements CoalescerTransport {
  private sequence = 0;
  private corked = false;
  /** Called back once the backlog is small again or the socket closed. */
  private waiting: (() => void)[] = [];

  /**
   * `wire`: the connection's TCP or TLS socket. Events other than text deltas sent within one tick
   * are corked into one write: a response's opening or closing events then cost one syscall and
   * one packet, not one each.
   */
  constructor(
    private readonly socket: WebSocket,
    private readonly wire?: Duplex,
  ) {
    socket.once("close", () => this.wake());
  }

  send(event: LaneEvent): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    // Deltas are already one frame per turn (DeltaCoalescer); the events around them come in bursts.
    if (!isDelta(event)) this.corkUntilNextTick();
    this.socket.send(withSequence(event, this.sequence++), this.written);
  }

  isBusy(): boolean {
    return this.socket.readyState === this.socket.OPEN && this.socket.bufferedAmount > BUSY_BYTES;
  }

  /**
   * Calls back once at most {@link BUSY_BYTES} are unsent, or the socket closed. While it is busy a
   * frame of ours is still unwritten, and its write callback checks again.
   */
  whenDrained(callback: () => void): void {
    if (this.isBusy()) this.waiting.push(callback);
    else setImmediate(callback);
  }

  /** Each frame's write callback (also called with an error when the socket is gone). */
  private readonly written = (): void => {
    if (this.waiting.length > 0 && !this.isBusy()) this.wake();
  };

  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const callback of waiting) callback();
  }

  private corkUntilNextTick(): void {
    const wire = this.wire;
    if (!wire || this.corked) return;
    this.corked = true;
    wire.cork();
    process.nextTick(() => {
      this.corked = false;
      wire.uncork();
    });
  }
}
