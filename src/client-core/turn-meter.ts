import type { ThreadView } from "./thread-view.js";

/** The shortest span of deltas a live rate is computed over: a shorter one is mostly noise. */
export const MIN_RATE_SPAN_MS = 200;

export interface Meter {
  /** Since the turn started (live), or null after it. */
  elapsedMs: number | null;
  ttftMs: number | null;
  tokensPerSecond: number | null;
  /** True while the turn runs: the numbers are the face's own estimate, not the agent's. */
  live: boolean;
}

/**
 * The turn's numbers. While it runs, measured here: each delta is about one token while the
 * socket keeps up, so the rate is (deltas - 1) over the time from the first delta to the latest,
 * once that spans {@link MIN_RATE_SPAN_MS}. After it, the agent's own numbers. Null before any turn.
 */
export function liveMeter(view: ThreadView, now: number): Meter | null {
  const turn = view.turn;
  if (turn) {
    const span =
      turn.firstDeltaAt !== null && turn.lastDeltaAt !== null ? turn.lastDeltaAt - turn.firstDeltaAt : 0;
    return {
      elapsedMs: now - turn.startedAt,
      ttftMs: turn.firstTokenAt === null ? null : turn.firstTokenAt - turn.startedAt,
      tokensPerSecond:
        span >= MIN_RATE_SPAN_MS && turn.deltas >= 2 ? ((turn.deltas - 1) * 1000) / span : null,
      live: true,
    };
  }
  const stats = view.turns.at(-1)?.stats;
  if (!stats) return null;
  return {
    elapsedMs: null,
    ttftMs: stats.timeToFirstTokenMs,
    tokensPerSecond: stats.tokensPerSecond,
    live: false,
  };
}

/** The meter line, alike in every face: `1.2 s · ttft 120 ms · ~31 tok/s` (`~`: a live estimate). */
export function meterText(view: ThreadView, now: number): string {
  const meter = liveMeter(view, now);
  if (!meter) return "";
  const parts: string[] = [];
  if (meter.elapsedMs !== null) parts.push(`${(meter.elapsedMs / 1000).toFixed(1)} s`);
  if (meter.ttftMs !== null) parts.push(`ttft ${Math.round(meter.ttftMs)} ms`);
  if (meter.tokensPerSecond !== null)
    parts.push(`${meter.live ? "~" : ""}${formatRate(meter.tokensPerSecond)} tok/s`);
  return parts.join(" · ");
}

/** A token rate as every face shows it: one decimal below 100, whole above. */
export function formatRate(rate: number): string {
  return rate >= 100 ? String(Math.round(rate)) : rate.toFixed(1);
}
