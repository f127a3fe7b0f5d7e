import type { Tool } from "./tools/tool.js";

/**
 * Plan mode travels in the turn, never in the instructions or the tool list, so the prompt prefix
 * the server keeps evaluated is the same in both modes: the turn's user message carries this note
 * at its end, and calls of tools that are not read-only are answered with {@link planModeRefusal}.
 */
export const PLAN_MODE_NOTE =
  "\n\n[Plan mode is on: only read_file, list_dir, search and load_skill run. Answer with a plan: the " +
  "steps, files and changes you would make.]";

/** What the user message of a plan-mode turn says to the model. */
export function withPlanNote(text: string): string {
  return text + PLAN_MODE_NOTE;
}

/** Whether a plan-mode turn may run `tool`: only Spark's own tools that change nothing. */
// biome-ignore lint/suspicious/noExplicitAny: a registry holds tools of every argument type
export function runsInPlanMode(tool: Tool<any>): boolean {
  return tool.readOnly === true;
}

/** The output the model gets for a call a plan-mode turn does not run. */
export function planModeRefusal(tool: string): string {
  return (
    `Not run: plan mode is on, so ${tool} is refused (only read_file, list_dir, search and load_skill run). ` +
    "Write the plan as your answer; the person switches to implement it."
  );
}
