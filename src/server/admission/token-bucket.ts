/**
 * A token bucket: holds up to `capacity`, refills continuously at `capacity` per minute. It may be
 * charged past empty (a response's tokens are known only after it ran); it then refuses until the
 * debt is repaid by refill.
 */
export class TokenBucket {
  private level: number;
  private updatedAt: number;
  private readonly perMs: number;

  constructor(
    readonly capacity: number,
    private readonly now: () => number,
  ) {
    this.level = capacity;
    this.updatedAt = now();
    this.perMs = capacity / 60_000;
  }

  /** What the bucket holds now. */
  get available(): number {
    this.refill();
    return this.level;
  }

  /** True when the bucket is full again (it can be forgotten). */
  get full(): boolean {
    return this.available >= this.capacity;
  }

  /** Takes `amount` when the bucket holds at least that much; false (nothing taken) otherwise. */
  take(amount: number): boolean {
    this.refill();
    if (this.level < amount) return false;
    this.level -= amount;
    return true;
  }

  /** Takes `amount` unconditionally; the level may go negative. */
  charge(amount: number): void {
    this.refill();
    this.level -= amount;
  }

  /** Seconds until the bucket holds `amount` (0 when it does now). */
  secondsUntil(amount: number): number {
    this.refill();
    const missing = Math.min(amount, this.capacity) - this.level;
    return missing <= 0 ? 0 : missing / this.perMs / 1000;
  }

  private refill(): void {
    const now = this.now();
    this.level = Math.min(this.capacity, this.level + (now - this.updatedAt) * this.perMs);
    this.updatedAt = now;
  }
}
