/** Files a ranking returns by default. */
export const DEFAULT_RANKED_FILES = 8;

/** Where a match may start: the first this many occurrences of the query's first character. */
const MAX_STARTS = 16;

const BOUNDARY = /[/._\-\s]/;

/**
 * How well `path` matches `query` as a fuzzy subsequence (case-insensitive), or null when the
 * query's characters do not all occur in the path in order. Higher is better: runs of consecutive
 * characters, characters at the start of a path segment or word, and matches in the file's own name
 * count more; longer paths count a little less. Tries the match from each place the query's first
 * character occurs (`pkg7` matches `packages/pkg7/` at the segment, not at `p` of `packages`).
 */
export function fuzzyScore(path: string, query: string): number | null {
  if (query === "") return -path.length / 100;
  const lowerPath = path.toLowerCase();
  const lowerQuery = query.toLowerCase();
  const nameStart = lowerPath.lastIndexOf("/") + 1;
  let best: number | null = null;
  let start = lowerPath.indexOf(lowerQuery[0]!);
  for (let tries = 0; start !== -1 && tries < MAX_STARTS; tries++) {
    const score = walk(lowerPath, lowerQuery, nameStart, start, true);
    if (score !== null && (best === null || score > best)) best = score;
    start = lowerPath.indexOf(lowerQuery[0]!, start + 1);
  }
  // Jumping to word starts can strand the rest of the query: the leftmost match always fits.
  best ??= walk(lowerPath, lowerQuery, nameStart, lowerPath.indexOf(lowerQuery[0]!), false);
  if (best === null) return null;
  // The query as one piece of the name (`par` in `parser.ts`) beats scattered letters.
  if (lowerPath.slice(nameStart).includes(lowerQuery)) best += 10;
  return best - path.length / 100;
}

/**
 * The score of matching `query` in `path` from `start` on: each next character right after the
 * previous one if it is there, else (with `jump`) its first occurrence at a word start, else its
 * first occurrence. Null when the query does not fit.
 */
function walk(path: string, query: string, nameStart: number, start: number, jump: boolean): number | null {
  if (start === -1) return null;
  let score = 0;
  let previous = -2;
  for (let q = 0; q < query.length; q++) {
    const char = query[q]!;
    let at: number;
    if (q === 0) at = start;
    else if (path[previous + 1] === char) at = previous + 1;
    else {
      at = path.indexOf(char, previous + 1);
      if (at === -1) return null;
      if (jump) {
        let boundary = at;
        while (boundary !== -1 && !(boundary === 0 || BOUNDARY.test(path[boundary - 1]!)))
          boundary = path.indexOf(char, boundary + 1);
        if (boundary !== -1) at = boundary;
      }
    }
    let points = 1;
    if (at === previous + 1) points += 4;
    if (at === 0 || BOUNDARY.test(path[at - 1]!)) points += 3;
    if (at >= nameStart) points += 2;
    score += points;
    previous = at;
  }
  return score;
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
