/** Files an `@` picker lists at most. */
export const MAX_MENTION_CHOICES = 8;

/** An `@` mention being typed: where its `@` is and what follows it up to the cursor. */
export interface MentionAtCursor {
  start: number;
  query: string;
}

/**
 * The `@` mention the cursor is at the end of (`fix @src/pa|`): `@` at the start or after
 * whitespace (so not an e-mail address), the cursor at the end of the word. Null otherwise.
 */
export function mentionAtCursor(text: string, cursor: number): MentionAtCursor | null {
  const after = text.slice(cursor);
  if (after !== "" && !/^\s/.test(after)) return null; // inside a word
  const before = text.slice(0, cursor);
  const mention = /(^|\s)@(\S*)$/.exec(before);
  if (!mention) return null;
  return { start: before.length - mention[2]!.length - 1, query: mention[2]! };
}

/** `text` with the mention at `mention` replaced by `@path ` and the cursor after it. */
export function insertMention(
  text: string,
  cursor: number,
  mention: MentionAtCursor,
  path: string,
): { text: string; cursor: number } {
  const head = `${text.slice(0, mention.start)}@${path}`;
  const tail = text.slice(cursor);
  return { text: head + (tail.startsWith(" ") ? tail : ` ${tail}`), cursor: head.length + 1 };
}
