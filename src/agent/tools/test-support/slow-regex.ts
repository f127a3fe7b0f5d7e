/**
 * A pattern and a line that keep RE2 busy for seconds (its DFA thrashes on them: linear time, but
 * a large constant), for tests that need a search still running when they act.
 */
export const SLOW_PATTERN = "a[ab]{200}[^ab]";

/** One line of `bytes` pseudo-random a/b characters (deterministic). */
export function slowLine(bytes = 2 * 1024 * 1024): string {
  const chars = new Array<string>(bytes);
  let seed = 12345;
  for (let i = 0; i < bytes; i++) {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    chars[i] = seed & 0x10000 ? "a" : "b";
  }
  return chars.join("");
}
