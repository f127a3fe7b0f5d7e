import { type TurnChoice, turnChoices } from "../../client-core/thread-turns.js";
import type { ThreadItem } from "../../protocol/agent.js";

/**
 * What `/fork [turn]` asks for: the turn to fork from (`args` empty: the latest; a number: that
 * turn), or the lines to show instead (`list`, a number out of range, no turn yet).
 */
export function forkTarget(args: string, items: readonly ThreadItem[]): TurnChoice | { lines: string[] } {
  const turns = turnChoices(items);
  if (turns.length === 0) return { lines: ["Nothing to fork yet: the session has no turn."] };
  const listing = turns.map((turn) => `  ${String(turn.number).padStart(3)}  ${turn.label}`);
  if (args === "") return turns.at(-1)!;
  const number = /^\d+$/.test(args) ? Number(args) : Number.NaN;
  const turn = turns[number - 1];
  if (turn) return turn;
  const head = args === "list" ? "Turns" : `No turn ${args}; the turns are`;
  return { lines: [`${head} (fork one with /fork N):`, ...listing] };
}
