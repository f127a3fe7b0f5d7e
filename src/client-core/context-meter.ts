import type { ContextUsage } from "../protocol/agent.js";

/** The share of the window used, 0 to 100 (rounded; more than 100 when a conversation overflows). */
export function contextPercent(usage: ContextUsage): number {
  return usage.window_tokens > 0 ? Math.round((usage.used_tokens * 100) / usage.window_tokens) : 0;
}

/** A token count in few characters: `950`, `12.3K`, `128K`, `1.05M`. */
export function shortTokens(tokens: number): string {
  if (tokens < 1000) return String(tokens);
  if (tokens < 1_000_000) {
    const k = tokens / 1000;
    return `${k < 100 ? Number(k.toFixed(1)) : Math.round(k)}K`;
  }
  return `${Number((tokens / 1_000_000).toFixed(2))}M`;
}

/** The context meter, alike in every face: `ctx 12.3K/32K 38%`; "" before the agent has said. */
export function contextMeterText(usage: ContextUsage | null): string {
  if (!usage) return "";
  return `ctx ${shortTokens(usage.used_tokens)}/${shortTokens(usage.window_tokens)} ${contextPercent(usage)}%`;
}

/** How the meter's colour reads: past the compaction threshold (`full`), past 60% of it (`filling`). */
export function contextLevel(usage: ContextUsage): "ok" | "filling" | "full" {
  if (usage.used_tokens >= usage.compact_at_tokens) return "full";
  return usage.used_tokens >= usage.compact_at_tokens * 0.6 ? "filling" : "ok";
}
