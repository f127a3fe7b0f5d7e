/** A run of agent text with the style the terminal gives it. */
export interface Span {
  text: string;
  style?: "bold" | "code" | "dim";
}

const FENCE = /^\s*(```|~~~)/;
const INLINE = /(`[^`\n]+`|\*\*[^*\n]+\*\*)/g;

/**
 * Light Markdown for the terminal, line by line so it works on text that is still streaming:
 * code fences (dimmed markers, code left as is), headings in bold, `inline code` in colour and
 * **bold**. `inFence` is whether the first line is inside a code block; the result says whether
 * the text ends inside one.
 */
export function styleAgentText(text: string, inFence: boolean): { lines: Span[][]; inFence: boolean } {
  const lines: Span[][] = [];
  let fenced = inFence;
  for (const line of text.split("\n")) {
    if (FENCE.test(line)) {
      lines.push([{ text: line, style: "dim" }]);
      fenced = !fenced;
    } else if (fenced) {
      lines.push([{ text: line }]);
    } else {
      const heading = /^#{1,6}\s+(.*)$/.exec(line);
      lines.push(heading ? [{ text: heading[1]!, style: "bold" }] : inlineSpans(line));
    }
  }
  return { lines, inFence: fenced };
}

/** Whether a code block is open after `text`, given whether one was open before it. */
export function fenceOpenAfter(text: string, inFence: boolean): boolean {
  let fenced = inFence;
  for (const line of text.split("\n")) if (FENCE.test(line)) fenced = !fenced;
  return fenced;
}

function inlineSpans(line: string): Span[] {
  const spans: Span[] = [];
  let last = 0;
  for (const match of line.matchAll(INLINE)) {
    const token = match[0];
    if (match.index > last) spans.push({ text: line.slice(last, match.index) });
    spans.push(
      token.startsWith("`")
        ? { text: token.slice(1, -1), style: "code" }
        : { text: token.slice(2, -2), style: "bold" },
    );
    last = match.index + token.length;
  }
  if (last < line.length) spans.push({ text: line.slice(last) });
  return spans;
}
