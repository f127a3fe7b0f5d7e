import { contextLevel, contextPercent, shortTokens } from "../../client-core/context-meter.js";
import type { ThreadView } from "../../client-core/thread-view.js";

/**
 * How full the open thread's context is (`context.updated`): tokens used of the model's window,
 * coloured as it nears the point where older turns are compacted. Hidden until the agent says.
 */
export function ContextMeter({ view }: { view: ThreadView | null }) {
  const usage = view?.context;
  if (!usage) return null;
  const percent = contextPercent(usage);
  return (
    <span
      class={`meter context-meter is-${contextLevel(usage)}`}
      role="status"
      title={`Context: ${usage.used_tokens.toLocaleString("en-US")} of ${usage.window_tokens.toLocaleString("en-US")} tokens; older turns are compacted past ${usage.compact_at_tokens.toLocaleString("en-US")} (or type /compact)`}
    >
      <span class="meter-label">context</span>{" "}
      <span class="meter-value" data-meter="context">
        {shortTokens(usage.used_tokens)}/{shortTokens(usage.window_tokens)} {percent}%
      </span>
      <span class="context-bar" aria-hidden="true">
        <span class="context-fill" style={{ width: `${Math.min(100, percent)}%` }} />
      </span>
    </span>
  );
}
