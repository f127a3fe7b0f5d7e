import type { ThreadInfo, ThreadItem } from "../protocol/agent.js";

/**
 * The line the terminal prints as the person leaves: how to come back to the session. Empty for a
 * session with no message (nothing was saved, so there is nothing to resume).
 */
export function resumeHint(thread: { info: ThreadInfo; history: readonly ThreadItem[] } | null): string {
  if (!thread?.history.some((item) => item.type === "user_message")) return "";
  return `To resume: spark resume ${thread.info.id}\n`;
}
