/** Below this many lines, a text is cut into pieces of about one line's length instead. */
const MIN_LINES = 20;
const PIECE_CHARS = 60;

/**
 * `text` with `share` (0..1) of its lines replaced by other text of the same length, at least one,
 * spread evenly: the prediction for an edit that changes those lines. Text with few line breaks (a
 * random-weight model's output) is cut into line-sized pieces instead.
 */
export function alterSegments(text: string, share: number): string {
  if (share <= 0) return text;
  const byLines = text.split("\n").length >= MIN_LINES;
  const pieces = byLines ? text.split("\n") : (text.match(new RegExp(`[^]{1,${PIECE_CHARS}}`, "gu")) ?? []);
  const count = Math.min(pieces.length, Math.max(1, Math.round(pieces.length * share)));
  const chosen = new Set(
    Array.from({ length: count }, (_, k) => Math.floor(((k + 0.5) * pieces.length) / count)),
  );
  const altered = pieces.map((piece, i) => (chosen.has(i) ? replacement(piece, i) : piece));
  return altered.join(byLines ? "\n" : "");
}

function replacement(piece: string, index: number): string {
  const length = Math.max(8, [...piece].length);
  return `/* edit ${index} */ `.repeat(Math.ceil(length / 12)).slice(0, length);
}
