import type { Entry } from "./thread-view.js";

/** A turn a person can rewind to: its user message and the files the agent's edits in it changed. */
export interface RewindPoint {
  /** The user message's item id (`thread.rewind`'s `item_id`). */
  id: string;
  text: string;
  /** Paths the turn's patches changed (as in their diffs), in first-changed order. */
  paths: string[];
}

/**
 * The turns of a conversation as every face offers them for a rewind: each user message with the
 * files changed until the next one, newest first. A steer belongs to the turn it steered: its
 * files are that turn's, and rewinding the turn goes back before the steer too.
 */
export function rewindPoints(entries: readonly Entry[]): RewindPoint[] {
  const points: RewindPoint[] = [];
  for (const entry of entries) {
    if (entry.kind === "user" && !(entry.steer && points.length > 0))
      points.push({ id: entry.id, text: entry.text, paths: [] });
    const point = points.at(-1);
    if (!point || entry.kind !== "tool" || entry.item.status !== "completed") continue;
    const display = entry.item.display;
    for (const file of display?.kind === "diff" ? display.files : []) {
      if (!point.paths.includes(file.path)) point.paths.push(file.path);
    }
  }
  return points.reverse();
}
