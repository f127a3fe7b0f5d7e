import type { ThreadInfo } from "../protocol/agent.js";

/**
 * The first line `spark exec --json` prints, before any turn event: the session's id, as Codex's
 * `thread.started` carries it, so a script can continue the session with `spark exec resume ID`,
 * and its model by the name every face shows (the tier).
 */
export function threadStartedLine(thread: ThreadInfo): string {
  return `${JSON.stringify({ type: "thread.started", thread_id: thread.id, model: thread.model })}\n`;
}
