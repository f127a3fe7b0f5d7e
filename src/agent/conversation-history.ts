import type { ThreadItem } from "../protocol/agent.js";
import { withPlanNote } from "./plan-mode.js";

/** A Responses input item as the agent sends it. */
export type ConversationInput =
  | { role: "user" | "assistant" | "developer"; content: string }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string };

/** The whole conversation as Responses input, for starting a chain over (resume after a restart). */
export function historyFromItems(items: readonly ThreadItem[]): ConversationInput[] {
  const out: ConversationInput[] = [];
  for (const item of items) {
    switch (item.type) {
      case "user_message":
        out.push({ role: "user", content: item.mode === "plan" ? withPlanNote(item.text) : item.text });
        break;
      case "agent_message":
        out.push({ role: "assistant", content: item.text });
        break;
      case "tool_call":
        // A call cut off while it was written never reached the model's conversation.
        if (item.partial) break;
        out.push({ type: "function_call", call_id: item.id, name: item.name, arguments: item.arguments });
        out.push({ type: "function_call_output", call_id: item.id, output: item.output ?? "Aborted." });
        break;
      // Earlier turns' reasoning is not sent back (chat templates such as Qwen3's drop it too).
      case "reasoning":
      case "notice":
        break;
      default: {
        const unknown: never = item;
        throw new Error(`Unknown item ${JSON.stringify(unknown)}`);
      }
    }
  }
  return out;
}

/** What a compaction keeps besides the last turns. */
export interface CompactionOptions {
  /** Turns kept verbatim at the end. Default: 2. */
  keepTurns?: number;
  /** What the person asked the compaction to keep in view (`/compact FOCUS`). */
  focus?: string;
}

/** The longest standing instruction or plan kept verbatim; a longer one is cut, marked with "…". */
export const MAX_KEPT_TEXT = 16_000;

/**
 * Compaction without a model call: earlier turns become a short digest (what the user asked, which
 * files were read or changed), the last `keepTurns` turns stay verbatim. What the person set out
 * for the whole session stays word for word: their first message (their standing instructions)
 * and the newest plan made in plan mode. The system prompt (with AGENTS.md) is not part of the
 * conversation: every request sends it. Deterministic and instant, so it never stalls the loop.
 * Null when no turn is old enough to compact.
 */
export function compactHistory(
  items: readonly ThreadItem[],
  options: CompactionOptions = {},
): ConversationInput[] | null {
  const keepTurns = options.keepTurns ?? 2;
  const turnStarts = items.flatMap((item, index) => (item.type === "user_message" ? [index] : []));
  const cut = turnStarts.length > keepTurns ? turnStarts[turnStarts.length - keepTurns]! : 0;
  const older = items.slice(0, cut);
  const recent = items.slice(cut);
  if (older.length === 0) return null;
  const first = older.find((item) => item.type === "user_message");
  const asked = older.flatMap((item) =>
    item.type === "user_message" && item !== first ? [`- ${item.text.split("\n")[0]!.slice(0, 200)}`] : [],
  );
  const touched = new Set<string>();
  for (const item of older) {
    if (item.type !== "tool_call") continue;
    const match = /"path"\s*:\s*"([^"]+)"/.exec(item.arguments);
    if (match) touched.add(`${item.name} ${match[1]}`);
    for (const file of item.display?.kind === "diff" ? item.display.files : [])
      touched.add(`changed ${file.path}`);
  }
  const plan = openPlan(older);
  const digest = [
    "Summary of the earlier conversation (compacted to fit the context window):",
    ...(first?.type === "user_message"
      ? ["The user's first message (their standing instructions), word for word:", kept(first.text)]
      : []),
    ...(plan ? ["The plan made in plan mode, word for word:", kept(plan)] : []),
    ...(options.focus ? [`The user asked to keep this in focus: ${options.focus}`] : []),
    ...(asked.length ? ["The user also asked:", ...asked] : []),
    ...(touched.size ? ["Files involved:", ...[...touched].map((t) => `- ${t}`)] : []),
  ].join("\n");
  return [{ role: "developer", content: digest }, ...historyFromItems(recent)];
}

/** The model's answer to the newest plan-mode message among `items` (its last message before the next user message). */
function openPlan(items: readonly ThreadItem[]): string | null {
  const start = items.findLastIndex((item) => item.type === "user_message" && item.mode === "plan");
  if (start < 0) return null;
  let plan: string | null = null;
  for (const item of items.slice(start + 1)) {
    if (item.type === "user_message") break;
    if (item.type === "agent_message") plan = item.text;
  }
  return plan;
}

const kept = (text: string) => (text.length > MAX_KEPT_TEXT ? `${text.slice(0, MAX_KEPT_TEXT)}…` : text);
