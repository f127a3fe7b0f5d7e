/** Files a ranking returns by default. */
export const DEFAULT_RANKED_FILES = 8;

/**
 * How well `path` matches `query` as a fuzzy subsequence (case-insensitive), or null when the
 * query's characters do not all occur in the path in order. Higher is better: runs of consecutive
 * characters, characters at the start of a path segment or word, and matches in the file's own name
 * count more; longer paths count a little less.
 */
export function fuzzyScore(path: string, query: string): number | null {
  if (query === "") return -path.length / 100;
  const lowerPath = path.toLowerCase();
  const lowerQuery = query.toLowerCase();
  const nameStart = lowerPath.lastIndexOf("/") + 1;
  let score = 0;
  let from = 0;
  let previous = -2;
  for (const char of lowerQuery) {
    const at = lowerPath.indexOf(char, from);
    if (at === -1) return null;
    let points = 1;
    if (at === previous + 1) points += 4;
    if (at === 0 || /[/._\-\s]/.test(lowerPath[at - 1]!)) points += 3;
    if (at >= nameStart) points += 2;
    score += points;
    previous = at;
    from = at + char.length;
  }
  // The query as one piece of the name (`par` in `parser.ts`) beats scattered letters.
  if (lowerPath.slice(nameStart).includes(lowerQuery)) score += 10;
  return score - path.length / 100;
}

/**
 * The `limit` files of `files` that match `query` best (see fuzzyScore), best first; files that do
 * not contain the query as a subsequence are left out. Ties keep the shorter, then the
 * alphabetically first path. `limit` default: {@link DEFAULT_RANKED_FILES}.
 */
export function rankFiles(files: readonly string[], query: string, limit = DEFAULT_RANKED_FILES): string[] {
  const scored: { path: string; score: number }[] = [];
  for (const path of files) {
    const score = fuzzyScore(path, query);
    if (score !== null) scored.push({ path, score });
  }
  scored.sort(
    (a, b) =>
      b.score - a.score || a.path.length - b.path.length || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
  );
  return scored.slice(0, Math.max(0, limit)).map((entry) => entry.path);
}
