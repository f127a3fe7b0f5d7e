/**
 * How long a draft pays, from what verifying a draft token costs (`tokenCost`, as a share of one
 * decode step: a pass over 1 + d tokens costs 1 + tokenCost * d steps) and the chance `p` that each
 * draft token is accepted (its i-th token with chance p^i, a geometric run). A pass then yields
 * (1 - p^(d+1)) / (1 - p) tokens on average; speculation pays where that exceeds its cost.
 */

/** Expected tokens a pass yields per decode step's worth of time, with a draft of `length`. */
export function expectedSpeedup(length: number, p: number, tokenCost: number): number {
  const tokens = p >= 1 ? length + 1 : (1 - p ** (length + 1)) / (1 - p);
  return tokens / (1 + tokenCost * length);
}

/**
 * The draft length (0 to `maxLength`) that yields the most tokens per unit of time; 0 where no
 * draft yields more than plain decoding (always where a token costs as much as it can return,
 * `tokenCost >= p`). Ties go to the shorter draft.
 */
export function bestDraftLength(p: number, tokenCost: number, maxLength: number): number {
  let best = 0;
  let bestSpeedup = 1;
  for (let length = 1; length <= maxLength; length++) {
    const speedup = expectedSpeedup(length, p, tokenCost);
    if (speedup > bestSpeedup * (1 + 1e-9)) {
      best = length;
      bestSpeedup = speedup;
    }
  }
  return best;
}

/**
 * The length the native loop drafts (patches/node-llama-cpp+*.patch, `DraftStats`): while
 * p^i > threshold, up to `maxLength`; none when p <= threshold; all of `maxLength` when p >= 0.999.
 */
export function nativeDraftLength(p: number, threshold: number, maxLength: number): number {
  if (p <= threshold) return 0;
  if (p >= 0.999) return maxLength;
  return Math.min(maxLength, Math.floor(Math.log(threshold) / Math.log(p)));
}

/** Acceptance rates a draft source's estimate moves through (a prediction: mostly high). */
export const ACCEPTANCE: readonly number[] = [
  0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99,
];

/**
 * The threshold to give the native loop as its token cost so that its rule, p^i > threshold,
 * drafts about the lengths that yield the most (see {@link bestDraftLength}): the rule drafts a
 * token while it is more likely accepted than it costs, which overdrafts wherever the pass already
 * yields more than one token per step (a token more must return its cost at that rate, not at
 * one). Never below `tokenCost`, so the loop never drafts where a token costs more than it returns.
 */
export function nativeDraftThreshold(tokenCost: number, maxLength: number): number {
  const lowest = Math.min(0.99, Math.max(0.01, tokenCost));
  let best = lowest;
  let bestLoss = Number.POSITIVE_INFINITY;
  for (let threshold = lowest; threshold < 0.995; threshold += 0.01) {
    let loss = 0;
    for (const p of ACCEPTANCE) {
      const ideal = expectedSpeedup(bestDraftLength(p, tokenCost, maxLength), p, tokenCost);
      const got = expectedSpeedup(nativeDraftLength(p, threshold, maxLength), p, tokenCost);
      loss += (ideal - got) / ideal;
    }
    if (loss < bestLoss - 1e-12) {
      best = threshold;
      bestLoss = loss;
    }
  }
  return best;
}

/** What the native loop is given: the longest draft, and the token cost its length rule uses. */
export interface NativeDraftSettings {
  maxDraft: number;
  tokenCost: number;
}

/**
 * The native loop's settings for a measured `tokenCost`: drafts of up to `maxLength` (a full
 * match yields most from the longest draft where each token costs less than a step) and the
 * threshold that makes its lengths the ones that yield most; no drafts where a token costs a
 * whole step or more.
 */
export function nativeDraftSettings(tokenCost: number, maxLength: number): NativeDraftSettings {
  const maxDraft = bestDraftLength(1, tokenCost, maxLength);
  return { maxDraft, tokenCost: nativeDraftThreshold(tokenCost, Math.max(1, maxDraft)) };
}
