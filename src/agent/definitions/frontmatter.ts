import { parseDocument } from "yaml";

/** A Markdown file's YAML frontmatter (a plain mapping) and the body after it. */
export interface Frontmatter {
  fields: Record<string, unknown>;
  body: string;
}

/** Characters of frontmatter read at most: the rest of a file is its body. */
const MAX_FRONTMATTER_CHARS = 16 * 1024;

/**
 * Splits `text` into its frontmatter and body: the file must open with a `---` line, and a later
 * `---` line closes the YAML. Returns why not, in words for the person, when the file has none, the
 * YAML does not parse (duplicate keys, aliases and custom tags are errors), or it is not a mapping.
 */
export function parseFrontmatter(text: string): Frontmatter | { problem: string } {
  const source = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const open = /^---[ \t]*\r?\n/.exec(source);
  if (!open) return { problem: "it does not start with a --- line (YAML frontmatter)" };
  const close = /^---[ \t]*\r?$/m;
  const rest = source.slice(open[0].length);
  const end = close.exec(rest);
  if (!end) return { problem: "its frontmatter has no closing --- line" };
  if (end.index > MAX_FRONTMATTER_CHARS)
    return { problem: `its frontmatter is longer than ${MAX_FRONTMATTER_CHARS} characters` };
  const yaml = rest.slice(0, end.index);
  const body = rest.slice(end.index + end[0].length).replace(/^\r?\n/, "");
  // No aliases: a few bytes of `&a [*a, *a]` expand to gigabytes.
  const doc = parseDocument(yaml, { uniqueKeys: true, prettyErrors: false });
  if (doc.errors.length > 0)
    return { problem: `its frontmatter is not valid YAML (${doc.errors[0]!.message.split("\n")[0]})` };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 0 });
  } catch (error) {
    return { problem: `its frontmatter is not valid YAML (${(error as Error).message.split("\n")[0]})` };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { problem: "its frontmatter is not a YAML mapping (key: value lines)" };
  return { fields: value as Record<string, unknown>, body };
}

/**
 * A one-line description: whitespace runs (a folded YAML string's newlines) become one space.
 * Null when it is not a string, is empty, is longer than `maxChars`, or holds control characters.
 */
export function oneLine(value: unknown, maxChars: number): string | null {
  if (typeof value !== "string") return null;
  const text = value.replace(/\s+/g, " ").trim();
  if (text === "" || text.length > maxChars) return null;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(text)) return null;
  return text;
}
