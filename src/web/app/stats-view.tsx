import { useEffect, useState } from "preact/hooks";
import type { ThreadView, TurnRecord } from "../../client-core/thread-view.js";
import { liveMeter } from "../../client-core/turn-meter.js";

const ms = (value: number | null) =>
  value === null ? "—" : value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value)} ms`;
const rate = (value: number | null) =>
  value === null ? "—" : `${value.toFixed(value >= 100 ? 0 : 1)} tok/s`;

/** Re-renders every `intervalMs` while `active`, for timers that tick without events. */
function useTick(active: boolean, intervalMs = 250): number {
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(() => setTick((t) => t + 1), intervalMs);
    return () => clearInterval(timer);
  }, [active, intervalMs]);
  return tick;
}

/**
 * Time to first token and tokens per second of the running turn, measured as tokens arrive
 * (`~`); once it ends, the server's own figures.
 */
export function TurnMeter({ view }: { view: ThreadView | null }) {
  const turn = view?.turn ?? null;
  useTick(turn !== null);
  if (turn) {
    const now = performance.now();
    const live = liveMeter(view!, now)!;
    const waiting = live.ttftMs === null ? live.elapsedMs : null;
    return (
      <div class="meter is-live" role="status" aria-label="Current turn">
        <span class="meter-item">
          <span class="meter-label">TTFT</span>{" "}
          <span class="meter-value" data-meter="ttft">
            {waiting !== null ? `${ms(waiting)}…` : ms(live.ttftMs)}
          </span>
        </span>
        <span class="meter-item">
          <span class="meter-label">speed</span>{" "}
          <span class="meter-value" data-meter="speed">
            {live.tokensPerSecond === null ? "—" : `~${rate(live.tokensPerSecond)}`}
          </span>
        </span>
        <span class="pulse" aria-hidden="true" />
      </div>
    );
  }
  const last = view?.turns.at(-1);
  if (!view) return null;
  if (!last) return <div class="meter is-empty">No turns yet</div>;
  return (
    <div class="meter" role="status" aria-label="Last turn">
      <span class="meter-item">
        <span class="meter-label">TTFT</span>{" "}
        <span class="meter-value" data-meter="ttft">
          {ms(last.stats.timeToFirstTokenMs)}
        </span>
      </span>
      <span class="meter-item">
        <span class="meter-label">speed</span>{" "}
        <span class="meter-value" data-meter="speed">
          {rate(last.stats.tokensPerSecond)}
        </span>
      </span>
    </div>
  );
}

/** Bars of time to first token and tokens per second, one pair per turn (the last 24). */
export function LatencyChart({ turns }: { turns: TurnRecord[] }) {
  const shown = turns.slice(-24);
  if (shown.length === 0) {
    return <p class="chart-empty">Latency and speed per turn appear here.</p>;
  }
  const ttfts = shown.map((t) => t.stats.timeToFirstTokenMs ?? 0);
  const speeds = shown.map((t) => t.stats.tokensPerSecond ?? 0);
  const maxTtft = Math.max(1, ...ttfts);
  const maxSpeed = Math.max(1, ...speeds);
  const width = 240;
  const band = 44;
  const step = width / Math.max(shown.length, 8);
  const bar = Math.max(2, step * 0.7);
  const summary = `${shown.length} turn${shown.length === 1 ? "" : "s"}; last: ${ms(ttfts.at(-1)!)} to first token, ${rate(speeds.at(-1)!)}`;
  return (
    <figure class="chart" aria-label={`Latency and speed per turn: ${summary}`}>
      <svg viewBox={`0 0 ${width} ${band * 2 + 24}`} role="img" aria-hidden="true">
        <text x="0" y="9" class="chart-label">
          TTFT (max {ms(maxTtft)})
        </text>
        {ttfts.map((value, i) => {
          const h = (value / maxTtft) * (band - 14);
          return (
            <rect
              key={`t${shown[i]!.id}`}
              x={i * step}
              y={band - h}
              width={bar}
              height={Math.max(h, 1)}
              class={`bar-ttft${shown[i]!.status === "completed" ? "" : " is-cut"}`}
            />
          );
        })}
        <text x="0" y={band + 21} class="chart-label">
          tok/s (max {maxSpeed.toFixed(0)})
        </text>
        {speeds.map((value, i) => {
          const h = (value / maxSpeed) * (band - 14);
          return (
            <rect
              key={`s${shown[i]!.id}`}
              x={i * step}
              y={band * 2 + 24 - h}
              width={bar}
              height={Math.max(h, 1)}
              class="bar-speed"
            />
          );
        })}
      </svg>
      <figcaption>{summary}</figcaption>
    </figure>
  );
}
