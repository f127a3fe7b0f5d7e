import { InvalidArgumentError } from "commander";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A commander parser for a duration such as `90s`, `5m`, `1h`, `1500ms` or `2.5m` (no unit: seconds),
 * in milliseconds from `minMs` to `maxMs`; anything else is refused.
 */
export function duration(minMs: number, maxMs: number) {
  return (value: string) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
    const ms = match ? Math.round(Number(match[1]) * UNIT_MS[match[2] ?? "s"]!) : Number.NaN;
    if (!Number.isFinite(ms) || ms < minMs || ms > maxMs) {
      throw new InvalidArgumentError(
        `expected a duration such as 90s, 5m or 1h, from ${formatDuration(minMs)} to ${formatDuration(maxMs)}`,
      );
    }
    return ms;
  };
}

/** `ms` as a duration option would take it back: `90s`, `5m`, `1h`, `1500ms`. */
export function formatDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
