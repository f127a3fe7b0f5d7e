export function median(values: number[]): number {
  return percentile(values, 50);
}

/** The p-th percentile (0-100) by linear interpolation between the nearest ranks; NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = ((sorted.length - 1) * p) / 100;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}
