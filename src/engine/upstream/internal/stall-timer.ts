/**
 * Counts down while a stream waits for its next chunk and calls `onStall` when the wait runs out.
 * It runs only while armed, so time a consumer spends with a chunk never counts as a stall.
 */
export class StallTimer {
  /** True once `onStall` was called. */
  fired = false;
  /** The length of the wait that ran out (or of the current one). */
  waitMs = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly onStall: () => void) {}

  /** Starts a wait of `ms`, replacing any running one. */
  arm(ms: number): void {
    this.stop();
    this.waitMs = ms;
    this.timer = setTimeout(() => {
      this.fired = true;
      this.onStall();
    }, ms);
  }

  /** Ends the current wait. Idempotent. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
