/**
 * How many prompt tokens the next prefill evaluation takes. llama.cpp cannot stop inside one
 * evaluation, so a chunk bounds how late a cancel or steer lands; but each evaluation is a round
 * trip through the addon's queue, and a chunk smaller than the context's batch splits a micro-batch
 * llama.cpp would have computed at once (llama-server evaluates the whole batch). So chunks start at
 * the configured size and grow toward the batch size while they stay well inside the time a cancel
 * may wait, and shrink when one took longer.
 */
export class PrefillPace {
  private size: number;

  constructor(
    private readonly smallest: number,
    private readonly largest: number,
    /** The longest an evaluation should take, in ms: a cancel waits at most about this long. */
    private readonly targetMs = 250,
  ) {
    this.size = Math.min(smallest, largest);
  }

  /** Tokens for the next evaluation. */
  next(): number {
    return this.size;
  }

  /** After an evaluation of `tokens` tokens that took `ms`: the next size, by the rate it showed. */
  record(tokens: number, ms: number): void {
    if (tokens < this.size) return; // a short tail says little about the rate
    const fitting = ms > 0 ? Math.floor((tokens * this.targetMs) / ms) : this.largest;
    // At most double per step: one fast chunk (a cached, short or idle moment) is not a trend.
    this.size = Math.max(this.smallest, Math.min(this.largest, 2 * this.size, fitting));
  }
}
