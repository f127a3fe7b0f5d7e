import { randomUUID } from "node:crypto";
import type { ThreadInfo, ThreadItem } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";

/** Titles are at most this long (as `thread.rename`'s). */
const MAX_TITLE = 200;

/**
 * The items a fork starts with: the parent's up to and including the turn started by the
 * `user_message` `itemId` (every item before the next user message that is no steer), or all of them. Refused while
 * a turn runs (its items are not complete), for an unknown item, and for one that starts no turn.
 */
export function forkedItems(
  parent: { readonly busy: boolean; readonly history: readonly ThreadItem[] },
  itemId?: string,
): ThreadItem[] {
  if (parent.busy) {
    throw new SparkError("invalid_request", "A turn is running; fork once it ends.", { param: "thread_id" });
  }
  const items = parent.history;
  if (itemId === undefined) {
    if (!items.some((item) => item.type === "user_message"))
      throw new SparkError("invalid_request", "The thread has no turn to fork yet.", { param: "thread_id" });
    return [...items];
  }
  const at = items.findIndex((item) => item.id === itemId);
  if (at === -1) throw new SparkError("not_found", `No item ${itemId} in this thread.`, { param: "item_id" });
  if (items[at]!.type !== "user_message") {
    throw new SparkError(
      "invalid_request",
      `Item ${itemId} starts no turn; name a turn by its user message's id.`,
      { param: "item_id" },
    );
  }
  // A steer belongs to the turn it steered.
  const next = items.findIndex((item, i) => i > at && item.type === "user_message" && !item.steer);
  return items.slice(0, next === -1 ? items.length : next);
}

/** The fork's info: a new id, "Fork of <title>", the parent's folder, model and mode. */
export function forkedInfo(parent: ThreadInfo, now = new Date()): ThreadInfo {
  const title = `Fork of ${parent.title}`;
  return {
    ...parent,
    id: `thr_${randomUUID().replaceAll("-", "").slice(0, 20)}`,
    title: title.length > MAX_TITLE ? `${title.slice(0, MAX_TITLE - 1)}…` : title,
    createdAt: now.toISOString(),
    updatedAt: now.toISOString(),
  };
}
