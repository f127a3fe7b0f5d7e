/** A line of text and the ending it had: "\n", "\r\n", or "" for a last line without one. */
export interface TextLine {
  text: string;
  eol: string;
}

/** Splits text into lines, keeping each line's own ending (files may mix LF and CRLF). */
export function splitLines(text: string): TextLine[] {
  const lines: TextLine[] = [];
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf("\n", start);
    if (newline === -1) {
      lines.push({ text: text.slice(start), eol: "" });
      break;
    }
    const crlf = newline > start && text[newline - 1] === "\r";
    lines.push({ text: text.slice(start, crlf ? newline - 1 : newline), eol: crlf ? "\r\n" : "\n" });
    start = newline + 1;
  }
  return lines;
}
