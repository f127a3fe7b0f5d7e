import type { ThreadItem } from "../protocol/agent.js";
import type { Entry, ThreadView } from "./thread-view-state.js";

// How item events (`item.started`, `item.completed`, `item.delta`) change a thread's entries.

/**
 * An item started or completed: its entry is replaced in place, or appended (a user message is
 * marked as a steer while `turn.steered` announced one).
 */
export function upsertItem(view: ThreadView, item: ThreadItem, completed: boolean, now: number): ThreadView {
  // Reasoning is shown once it is complete, dimmed (its deltas find no entry).
  if (item.type === "reasoning" && !completed) return view;
  const at = view.entries.findIndex((entry) => entry.id === item.id);
  if (at !== -1) {
    const entries = [...view.entries];
    entries[at] = entryOf(item, { completed, steer: false, existing: view.entries[at] });
    return { ...view, entries };
  }
  const steer = item.type === "user_message" && view.pendingSteers > 0;
  const entry = entryOf(item, { completed, steer, existing: undefined });
  // A tool call settles the time to first token: the model's first output may be the call itself.
  const turn =
    view.turn && item.type === "tool_call" && view.turn.firstTokenAt === null
      ? { ...view.turn, firstTokenAt: now }
      : view.turn;
  return {
    ...view,
    entries: [...view.entries, entry],
    pendingSteers: steer ? view.pendingSteers - 1 : view.pendingSteers,
    turn,
  };
}

/**
 * A streamed piece of an agent message's text, or of a running tool call's arguments (the model
 * writing the call, e.g. an `apply_patch` shown as it grows). Either counts toward the live rate.
 */
export function delta(view: ThreadView, itemId: string, text: string, now: number): ThreadView {
  const at = view.entries.findIndex((entry) => entry.id === itemId);
  const entry = view.entries[at];
  const entries = [...view.entries];
  if (entry?.kind === "agent") entries[at] = { ...entry, text: entry.text + text };
  else if (entry?.kind === "tool" && entry.item.status === "running")
    entries[at] = { ...entry, item: { ...entry.item, arguments: entry.item.arguments + text } };
  else return view;
  const turn = view.turn
    ? {
        ...view.turn,
        firstTokenAt: view.turn.firstTokenAt ?? now,
        deltas: view.turn.deltas + 1,
        firstDeltaAt: view.turn.firstDeltaAt ?? now,
        lastDeltaAt: now,
      }
    : null;
  return { ...view, entries, turn };
}

/** The entry that shows `item` (`existing`: the one it replaces, whose streamed text or file states it keeps). */
export function entryOf(
  item: ThreadItem,
  how: { completed: boolean; steer: boolean; existing: Entry | undefined },
): Entry {
  const { existing } = how;
  switch (item.type) {
    case "user_message":
      return {
        kind: "user",
        id: item.id,
        text: item.text,
        steer: how.steer || item.steer === true || (existing?.kind === "user" && existing.steer),
        ...(item.mode === "plan" ? { plan: true as const } : {}),
      };
    case "agent_message":
      // item.completed carries the whole text; item.started an empty one, filled by deltas.
      return {
        kind: "agent",
        id: item.id,
        text: how.completed || existing?.kind !== "agent" ? item.text : existing.text,
        streaming: !how.completed,
      };
    case "tool_call":
      return { kind: "tool", id: item.id, item, files: existing?.kind === "tool" ? existing.files : {} };
    case "notice":
    case "reasoning":
      return { kind: "notice", id: item.id, text: item.text, tone: "dim" };
    default: {
      const unknown: never = item;
      const { id, type } = unknown as { id: string; type: string };
      return {
        kind: "notice",
        id,
        text: `This view does not know the item "${type}" (a newer Spark?).`,
        tone: "warn",
      };
    }
  }
}
