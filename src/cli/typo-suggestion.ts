/**
 * The command `word` was likely meant to be, when `spark WORD ...` names no command but is one slip
 * away from one (`exce` for exec, `srve` for serve): a single bare lowercase word within a small
 * edit distance (a typo, a missing or doubled letter, two letters swapped). Null for anything else,
 * which the agent receives as the first words of a prompt (`spark "why does x fail"`).
 *
 * Short names allow no slip for three letters (`cap` is a word, not `acp`), one up to six letters
 * and two from seven (`wroktre` for worktree).
 */
export function mistypedCommand(word: string, commands: readonly string[]): string | null {
  if (!/^[a-z][a-z-]{1,31}$/.test(word) || commands.includes(word)) return null;
  let best: { name: string; distance: number } | null = null;
  for (const name of commands) {
    const allowed = name.length <= 3 ? 0 : name.length >= 7 ? 2 : 1;
    const distance = editDistance(word, name);
    if (distance <= allowed && (best === null || distance < best.distance)) best = { name, distance };
  }
  return best?.name ?? null;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
