import { highlight } from "../../../src/client-core/highlight.js";
import { type MarkdownBlock, type MarkdownInline, parseMarkdown } from "../../../src/client-core/markdown.js";
import { MarkdownStream } from "../../../src/client-core/markdown-stream.js";

/**
 * Agent messages as DOM nodes (never HTML strings), from the client core's Markdown tree: nothing
 * the model writes can run as markup. Streaming text renders too: an unclosed fence is code so far.
 */
export function renderMarkdown(doc: Document, text: string): DocumentFragment {
  const fragment = doc.createDocumentFragment();
  fragment.append(...parseMarkdown(text).map((block) => blockNode(doc, block)));
  return fragment;
}

/**
 * A message that streams in: each update parses only the open tail of the text, and the nodes of
 * finished blocks are kept as they are (a selection in them survives the next delta).
 */
export class MarkdownView {
  readonly element: HTMLElement;
  private readonly stream = new MarkdownStream();
  private shown: { block: MarkdownBlock; node: Node }[] = [];

  constructor(private readonly doc: Document) {
    this.element = doc.createElement("div");
    this.element.className = "markdown";
  }

  update(text: string): void {
    const blocks = this.stream.update(text);
    let same = 0;
    while (same < blocks.length && same < this.shown.length && this.shown[same]!.block === blocks[same])
      same++;
    for (const { node } of this.shown.splice(same)) node.parentNode?.removeChild(node);
    for (const block of blocks.slice(same)) {
      const node = blockNode(this.doc, block);
      this.shown.push({ block, node });
      this.element.append(node);
    }
  }
}

function h(doc: Document, tag: string, ...children: (Node | string)[]): HTMLElement {
  const element = doc.createElement(tag);
  element.append(...children);
  return element;
}

function blockNode(doc: Document, block: MarkdownBlock): Node {
  switch (block.kind) {
    case "heading":
      return h(doc, `h${Math.min(6, block.level + 2)}`, ...inlineNodes(doc, block.inline));
    case "paragraph":
      return h(doc, "p", ...inlineNodes(doc, block.inline));
    case "text":
      return h(doc, "span", ...inlineNodes(doc, block.inline));
    case "code": {
      const code = h(
        doc,
        "code",
        ...highlight(block.text, block.language).map(({ kind, text }) => {
          if (kind === "plain") return text;
          const span = h(doc, "span", text);
          span.className = `tok-${kind}`;
          return span;
        }),
      );
      if (block.language) code.dataset.lang = block.language;
      return h(doc, "pre", code);
    }
    case "list": {
      const list = h(
        doc,
        block.ordered ? "ol" : "ul",
        ...block.items.map((item) => {
          const li = h(doc, "li", ...item.blocks.map((child) => blockNode(doc, child)));
          if (item.checked !== null) {
            const box = doc.createElement("input");
            box.type = "checkbox";
            box.checked = item.checked;
            box.disabled = true;
            li.prepend(box);
          }
          return li;
        }),
      );
      if (block.ordered && block.start !== 1) list.setAttribute("start", String(block.start));
      return list;
    }
    case "quote":
      return h(doc, "blockquote", ...block.blocks.map((child) => blockNode(doc, child)));
    case "table": {
      const cell = (tag: string, inline: MarkdownInline[], index: number) => {
        const element = h(doc, tag, ...inlineNodes(doc, inline));
        const align = block.align[index];
        if (align) element.style.textAlign = align;
        return element;
      };
      return h(
        doc,
        "table",
        h(doc, "thead", h(doc, "tr", ...block.header.map((inline, index) => cell("th", inline, index)))),
        h(
          doc,
          "tbody",
          ...block.rows.map((row) => h(doc, "tr", ...row.map((inline, index) => cell("td", inline, index)))),
        ),
      );
    }
    case "rule":
      return doc.createElement("hr");
    default: {
      const unknown: never = block;
      return doc.createTextNode(String(unknown));
    }
  }
}

function inlineNodes(doc: Document, inline: readonly MarkdownInline[]): (Node | string)[] {
  return inline.map((part) => {
    switch (part.kind) {
      case "text":
        return part.text;
      case "code":
        return h(doc, "code", part.text);
      case "strong":
      case "em":
      case "del":
        return h(doc, part.kind, ...inlineNodes(doc, part.children));
      case "link": {
        const link = h(doc, "a", ...inlineNodes(doc, part.children));
        link.setAttribute("href", part.href);
        link.title = part.href;
        return link;
      }
      case "break":
        return doc.createElement("br");
      default: {
        const unknown: never = part;
        return String(unknown);
      }
    }
  });
}
