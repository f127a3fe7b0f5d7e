/**
 * A small, safe Markdown renderer for agent messages: fenced code, paragraphs, lists, headings,
 * inline code, bold and italics. It builds DOM nodes (never HTML strings), so nothing the model
 * writes can run as markup. Streaming text renders too: an unclosed fence is code so far.
 */
export function renderMarkdown(doc: Document, text: string): DocumentFragment {
  const fragment = doc.createDocumentFragment();
  const lines = text.split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    const fence = /^\s*(`{3,}|~{3,})\s*([\w+-]*)/.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const code: string[] = [];
      i++;
      while (i < lines.length && !lines[i]!.trim().startsWith(marker)) code.push(lines[i++]!);
      i++;
      const pre = doc.createElement("pre");
      const element = doc.createElement("code");
      if (fence[2]) element.dataset.lang = fence[2];
      element.textContent = code.join("\n");
      pre.append(element);
      fragment.append(pre);
      continue;
    }
    if (!line.trim()) {
      i++;
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      const element = doc.createElement(`h${Math.min(6, heading[1]!.length + 2)}`);
      element.append(renderInline(doc, heading[2]!));
      fragment.append(element);
      i++;
      continue;
    }
    const bullet = /^\s*(?:[-*+]|\d+[.)])\s+/;
    if (bullet.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = doc.createElement(ordered ? "ol" : "ul");
      while (i < lines.length && bullet.test(lines[i]!)) {
        const item = doc.createElement("li");
        item.append(renderInline(doc, lines[i]!.replace(bullet, "")));
        list.append(item);
        i++;
      }
      fragment.append(list);
      continue;
    }
    const paragraph: string[] = [];
    while (
      i < lines.length &&
      lines[i]!.trim() &&
      !/^\s*(`{3,}|~{3,})/.test(lines[i]!) &&
      !bullet.test(lines[i]!)
    ) {
      paragraph.push(lines[i++]!);
    }
    const element = doc.createElement("p");
    element.append(renderInline(doc, paragraph.join("\n")));
    fragment.append(element);
  }
  return fragment;
}

/** Inline code, **bold** and *italics*; everything else is text. */
export function renderInline(doc: Document, text: string): DocumentFragment {
  const fragment = doc.createDocumentFragment();
  const pattern = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) fragment.append(text.slice(last, match.index));
    if (match[2] !== undefined) {
      const code = doc.createElement("code");
      code.textContent = match[2];
      fragment.append(code);
    } else {
      const element = doc.createElement(match[3] !== undefined ? "strong" : "em");
      element.textContent = match[3] ?? match[4]!;
      fragment.append(element);
    }
    last = match.index + match[0].length;
  }
  if (last < text.length) fragment.append(text.slice(last));
  return fragment;
}
