import type { PlanEntry } from "@agentclientprotocol/sdk";

/** The most steps a plan shows, and the longest step: a plan is for reading at a glance. */
const MAX_ENTRIES = 50;
const MAX_ENTRY_CHARS = 500;

/**
 * The steps of a plan-mode answer, for the client's plan view: its top-level list items (`1.`,
 * `1)`, `-`, `*`), in order, each pending. Spark's plans are Markdown text; an answer without a
 * list has no steps (and gets no `plan` update).
 */
export function planEntries(answer: string): PlanEntry[] {
  const entries: PlanEntry[] = [];
  for (const line of answer.split("\n")) {
    const step = /^(?:\d{1,3}[.)]|[-*])\s+(\S.*)$/.exec(line.trimEnd());
    if (!step) continue;
    const content = step[1]!;
    entries.push({
      content: content.length > MAX_ENTRY_CHARS ? `${content.slice(0, MAX_ENTRY_CHARS - 1)}…` : content,
      priority: "medium",
      status: "pending",
    });
    if (entries.length === MAX_ENTRIES) break;
  }
  return entries;
}
