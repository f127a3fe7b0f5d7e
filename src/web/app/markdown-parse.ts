/**
 * Inline Markdown: text, `code`, **strong**, *emphasis* and [links](https://...). `at` is the
 * offset where the part starts in the text parsed, a key that stays put while text streams in.
 */
export type Inline = { at: number } & (
  | { kind: "text"; text: string }
  | { kind: "code"; text: string }
  | { kind: "strong"; children: Inline[] }
  | { kind: "em"; children: Inline[] }
  | { kind: "link"; href: string; children: Inline[] }
);

/** A block of the text; `line` is where it starts (0-based), a key that stays put while streaming. */
export type Block = { line: number } & (
  | { kind: "heading"; level: number; inline: Inline[] }
  | { kind: "paragraph"; inline: Inline[] }
  /** `open` while its closing fence has not streamed in yet. */
  | { kind: "code"; language: string; text: string; open: boolean }
  | { kind: "list"; ordered: boolean; start: number; items: { line: number; inline: Inline[] }[] }
  | { kind: "quote"; inline: Inline[] }
  | { kind: "rule" }
);

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const ITEM = /^\s{0,6}([-*+]|(\d{1,9})[.)])\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;

/**
 * The Markdown the agent writes, parsed into blocks. Works on text that is still streaming (an
 * unclosed fence is an open code block) and never produces HTML: the app renders the tree as
 * elements, so nothing the model says can inject markup.
 */
export function parseMarkdown(text: string): Block[] {
  const blocks: Block[] = [];
  // List items and quotes gather their raw lines first; their inline Markdown is parsed at the end.
  const raw = new Map<object, string>();
  const lines = text.split("\n");
  let paragraph: string[] = [];
  let paragraphLine = 0;
  const flush = () => {
    if (paragraph.length > 0) {
      blocks.push({ kind: "paragraph", line: paragraphLine, inline: parseInline(paragraph.join("\n")) });
    }
    paragraph = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fence = FENCE.exec(line);
    if (fence) {
      flush();
      const start = i;
      const marker = fence[1]!;
      const body: string[] = [];
      let open = true;
      for (i++; i < lines.length; i++) {
        if (lines[i]!.trim().startsWith(marker) && lines[i]!.trim().replace(/[`~]/g, "") === "") {
          open = false;
          break;
        }
        body.push(lines[i]!);
      }
      // A block still streaming in shows no empty last line before its next one arrives.
      if (open && body.at(-1) === "") body.pop();
      blocks.push({ kind: "code", line: start, language: fence[2] ?? "", text: body.join("\n"), open });
      continue;
    }
    if (line.trim() === "") {
      flush();
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flush();
      blocks.push({ kind: "heading", line: i, level: heading[1]!.length, inline: parseInline(heading[2]!) });
      continue;
    }
    if (RULE.test(line)) {
      flush();
      blocks.push({ kind: "rule", line: i });
      continue;
    }
    const previous = blocks.at(-1);
    const item = ITEM.exec(line);
    if (item) {
      flush();
      const ordered = item[2] !== undefined;
      const entry = { line: i, inline: [] };
      raw.set(entry, item[3]!);
      if (previous?.kind === "list" && previous.ordered === ordered) previous.items.push(entry);
      else blocks.push({ kind: "list", line: i, ordered, start: Number(item[2] ?? 1), items: [entry] });
      continue;
    }
    const quote = QUOTE.exec(line);
    if (quote) {
      flush();
      if (previous?.kind === "quote") raw.set(previous, `${raw.get(previous)}\n${quote[1]}`);
      else {
        const block: Block = { kind: "quote", line: i, inline: [] };
        raw.set(block, quote[1]!);
        blocks.push(block);
      }
      continue;
    }
    if (paragraph.length === 0 && previous?.kind === "list" && /^\s+\S/.test(line)) {
      // A continuation line of the last list item.
      const last = previous.items.at(-1)!;
      raw.set(last, `${raw.get(last)} ${line.trim()}`);
      continue;
    }
    if (paragraph.length === 0) paragraphLine = i;
    paragraph.push(line);
  }
  flush();
  for (const [holder, source] of raw) (holder as { inline: Inline[] }).inline = parseInline(source);
  return blocks;
}

const INLINE =
  /(`+)([\s\S]*?[^`])\1(?!`)|\*\*(?=\S)([\s\S]*?\S)\*\*|\*(?=[^\s*])([^*]*?[^\s*])\*|\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g;

export function parseInline(text: string, base = 0): Inline[] {
  const out: Inline[] = [];
  let last = 0;
  for (const match of text.matchAll(INLINE)) {
    if (match.index > last) out.push({ kind: "text", at: base + last, text: text.slice(last, match.index) });
    const [whole, ticks, code, strong, em, label, href] = match;
    const at = base + match.index;
    if (code !== undefined) {
      out.push({ kind: "code", at, text: code.trim() === "" ? code : code.replace(/^ (.*) $/s, "$1") });
    } else if (strong !== undefined) out.push({ kind: "strong", at, children: parseInline(strong, at + 2) });
    else if (em !== undefined) out.push({ kind: "em", at, children: parseInline(em, at + 1) });
    else out.push({ kind: "link", at, href: href!, children: parseInline(label!, at + 1) });
    void ticks;
    last = match.index + whole.length;
  }
  if (last < text.length) out.push({ kind: "text", at: base + last, text: text.slice(last) });
  return out;
}
