import type { ThreadItem } from "../protocol/agent.js";

/** One turn of a thread as a picker lists it: named by its user message's id. */
export interface TurnChoice {
  /** The `user_message` item id (what `thread.fork` takes as `item_id`). */
  itemId: string;
  /** 1 for the first turn. */
  number: number;
  /** The message, on one line, at most `width` characters. */
  label: string;
}

/** The turns of `items`, oldest first; a steer belongs to the turn it steered. */
export function turnChoices(items: readonly ThreadItem[], width = 60): TurnChoice[] {
  const turns: TurnChoice[] = [];
  for (const item of items) {
    if (item.type !== "user_message" || item.steer) continue;
    const line = item.text.replace(/\s+/g, " ").trim();
    turns.push({
      itemId: item.id,
      number: turns.length + 1,
      label: line.length > width ? `${line.slice(0, width - 1)}…` : line,
    });
  }
  return turns;
}
