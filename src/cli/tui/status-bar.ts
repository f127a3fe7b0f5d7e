import path from "node:path";
import { Box, Text, useWindowSize } from "ink";
import React from "react";
import { contextMeterText } from "../../client-core/context-meter.js";
import type { ThreadView } from "../../client-core/thread-view.js";
import { formatRate, liveMeter } from "../../client-core/turn-meter.js";
import type { ConversationView } from "./conversation-store.js";

const h = React.createElement;

export interface StatusBarProps {
  modelId: string;
  view: ConversationView;
  /** The clock, for elapsed time and live rates (ms, same origin as the store's). */
  now: number;
  /** Something the UI itself is doing (starting a session, switching models). */
  activity: string | null;
  /** Ctrl+C was pressed once on an empty prompt. */
  quitArmed: boolean;
  /** The next turns run in plan mode (Shift+Tab). */
  plan?: boolean;
  /** The workspace and session (see {@link placeLabel}), first on the line when there is room. */
  place?: string;
}

/** The line under the prompt: model, state, turn timing, and the keys that apply now. */
export function StatusBar({
  modelId,
  view,
  now,
  activity,
  quitArmed,
  plan,
  place: fullPlace = "",
}: StatusBarProps): React.ReactElement {
  const { columns } = useWindowSize();
  const state = activity ?? stateLabel(view, now);
  const busy = activity !== null || view.phase !== "idle";
  const model = modelId || "default model";
  const subs = subAgentsLabel(view);
  const context = contextMeterText(view.thread.context);
  const metrics = [...(context ? [context] : []), ...turnMetrics(view.thread, now), ...(subs ? [subs] : [])];
  const details = metrics.length > 0 ? ` · ${metrics.join(" · ")}` : "";
  // Padding 1 each side, and at least 2 spaces between the halves; hints shorten, then give way.
  const free = columns - (model.length + 3 + state.length + details.length + 4 + (plan ? PLAN.length : 0));
  // The place gives way first: shown only where the whole of the rest fits beside it.
  const place =
    fullPlace && free - (fullPlace.length + 3) >= (quitArmed ? QUIT.length : hints(view).length)
      ? `${fullPlace} · `
      : "";
  const room = free - place.length;
  const right = quitArmed
    ? QUIT
    : ([hints(view), hints(view, true)].find((hint) => hint.length <= room) ?? "");
  const showRight = right !== "";
  return h(
    Box,
    { paddingX: 1 },
    h(
      Box,
      { flexGrow: 1, flexShrink: 1 },
      h(
        Text,
        { wrap: "truncate-end" },
        place ? h(Text, { dimColor: true }, place) : null,
        h(Text, { color: "cyan" }, model),
        h(Text, { dimColor: true }, " · "),
        h(Text, { color: busy ? "yellow" : "green" }, state),
        plan ? h(Text, { color: "magenta" }, PLAN) : null,
        details ? h(Text, { dimColor: true }, details) : null,
      ),
    ),
    showRight
      ? h(
          Box,
          { flexShrink: 0, marginLeft: 2 },
          h(Text, quitArmed ? { color: "yellow" } : { dimColor: true }, right),
        )
      : null,
  );
}

const PLAN = " · plan mode (Shift+Tab)";
const QUIT = "Press Ctrl+C again to quit";

/**
 * Where the person is: the workspace folder's name and the session's short id (`spark resume`
 * takes it as it is), e.g. `parser · thr_3f2a9c1d`; "" when neither is known yet.
 */
export function placeLabel(info: { id: string; cwd: string } | null, workspace?: string): string {
  const folder = info?.cwd ?? workspace;
  const parts = [folder ? path.basename(folder) || folder : "", info ? info.id.slice(0, 12) : ""];
  return parts.filter((part) => part !== "").join(" · ");
}

/** Running sub-agents: `2 sub-agents (sub_ab12: read_file, 40 tok)`, or "" when none. */
export function subAgentsLabel(view: ConversationView): string {
  const latest = view.subAgents.at(-1);
  if (!latest) return "";
  const count = view.subAgents.length;
  return `${count} sub-agent${count > 1 ? "s" : ""} (${latest.id}: ${latest.progress}, ${latest.outputTokens} tok)`;
}

/** `idle`, `thinking 1.2s`, `streaming 3.4s`, ... */
export function stateLabel(view: ConversationView, now: number): string {
  const turn = view.thread.turn;
  if (view.phase === "idle" || !turn) return view.phase;
  return `${view.phase} ${((now - turn.startedAt) / 1000).toFixed(1)}s`;
}

/**
 * Time to first token and tokens per second, as the client core's meter has them (a live estimate
 * while the turn runs, marked `~`; the agent's own numbers after it), and how the last turn ended
 * when it did not complete.
 */
export function turnMetrics(thread: ThreadView, now: number): string[] {
  const meter = liveMeter(thread, now);
  if (!meter) return [];
  const parts: string[] = [];
  if (meter.ttftMs !== null) parts.push(`ttft ${Math.round(meter.ttftMs)} ms`);
  if (meter.tokensPerSecond !== null)
    parts.push(`${meter.live ? "~" : ""}${formatRate(meter.tokensPerSecond)} tok/s`);
  const last = thread.turns.at(-1);
  if (!meter.live && last && last.status !== "completed") parts.push(`last turn ${last.status}`);
  return parts;
}

/** The keys that apply now; `short` for a narrow terminal. */
export function hints(view: ConversationView, short = false): string {
  if (view.approvals.length > 0) return short ? "y/n · Esc" : "y approve · n deny · Esc interrupt";
  if (view.phase !== "idle")
    return short ? "Esc stop · Tab queue" : "Esc interrupt · Enter steer · Tab queue · /help";
  return short ? "/help" : "Enter send · Tab queue · /help";
}
