import { Component, type ComponentChildren, Fragment } from "preact";
import { useRef } from "preact/hooks";
import { highlight } from "../../client-core/highlight.js";
import type { MarkdownBlock, MarkdownInline, TableAlign } from "../../client-core/markdown.js";
import { MarkdownStream } from "../../client-core/markdown-stream.js";

/**
 * Agent text as Markdown with highlighted code, rendered as elements, never as HTML. While the
 * text streams in, only its open tail is parsed again, and finished blocks are not re-rendered.
 */
export function Markdown({ text }: { text: string }) {
  const stream = useRef<MarkdownStream | null>(null);
  stream.current ??= new MarkdownStream();
  return <div class="markdown">{renderBlocks(stream.current.update(text))}</div>;
}

/** One block; a block object never changes, so the same object needs no new render. */
class BlockView extends Component<{ block: MarkdownBlock }> {
  override shouldComponentUpdate(next: { block: MarkdownBlock }): boolean {
    return next.block !== this.props.block;
  }

  override render() {
    return renderBlock(this.props.block);
  }
}

function CodeBlock({ code, language }: { code: string; language: string }) {
  return (
    <pre class="code" data-language={language || undefined}>
      {language ? <span class="code-language">{language}</span> : null}
      <code>
        {highlight(code, language).map(({ kind, text }, index) =>
          kind === "plain" ? (
            text
          ) : (
            // biome-ignore lint/suspicious/noArrayIndexKey: tokens of a growing block are appended; a place is an identity
            <span key={index} class={`tok-${kind}`}>
              {text}
            </span>
          ),
        )}
      </code>
    </pre>
  );
}

function renderBlocks(blocks: readonly MarkdownBlock[]): ComponentChildren {
  return blocks.map((block, index) => (
    // biome-ignore lint/suspicious/noArrayIndexKey: Markdown grows only at its end while it streams; a place is an identity
    <BlockView key={index} block={block} />
  ));
}

function renderBlock(block: MarkdownBlock): ComponentChildren {
  switch (block.kind) {
    case "heading": {
      const Tag = `h${Math.min(block.level + 2, 6)}` as "h3";
      return <Tag>{renderInline(block.inline)}</Tag>;
    }
    case "paragraph":
      return <p>{renderInline(block.inline)}</p>;
    case "text":
      return renderInline(block.inline);
    case "code":
      return <CodeBlock code={block.text} language={block.language} />;
    case "list": {
      const items = block.items.map((item, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: items are only appended while a list streams in
        <li key={index}>
          {item.checked === null ? null : <input type="checkbox" checked={item.checked} disabled />}
          {renderBlocks(item.blocks)}
        </li>
      ));
      return block.ordered ? <ol start={block.start}>{items}</ol> : <ul>{items}</ul>;
    }
    case "quote":
      return <blockquote>{renderBlocks(block.blocks)}</blockquote>;
    case "table":
      return (
        <table>
          <thead>
            <TableRow tag="th" cells={block.header} align={block.align} />
          </thead>
          <tbody>
            {block.rows.map((cells, index) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: rows are only appended while a table streams in
              <TableRow key={index} tag="td" cells={cells} align={block.align} />
            ))}
          </tbody>
        </table>
      );
    case "rule":
      return <hr />;
    default: {
      const unknown: never = block;
      return String(unknown);
    }
  }
}

function TableRow({
  tag: Cell,
  cells,
  align,
}: {
  tag: "th" | "td";
  cells: MarkdownInline[][];
  align: TableAlign[];
}) {
  return (
    <tr>
      {cells.map((cell, index) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a cell's column is its identity
        <Cell key={index} style={align[index] ? { textAlign: align[index] } : undefined}>
          {renderInline(cell)}
        </Cell>
      ))}
    </tr>
  );
}

function renderInline(inline: readonly MarkdownInline[]): ComponentChildren {
  return inline.map((part, index) => (
    // biome-ignore lint/suspicious/noArrayIndexKey: inline content grows only at its end; a place is an identity
    <Fragment key={index}>{renderPart(part)}</Fragment>
  ));
}

function renderPart(part: MarkdownInline): ComponentChildren {
  switch (part.kind) {
    case "text":
      return part.text;
    case "code":
      return <code>{part.text}</code>;
    case "strong":
      return <strong>{renderInline(part.children)}</strong>;
    case "em":
      return <em>{renderInline(part.children)}</em>;
    case "del":
      return <del>{renderInline(part.children)}</del>;
    case "link":
      return (
        <a href={part.href} target="_blank" rel="noopener noreferrer">
          {renderInline(part.children)}
        </a>
      );
    case "break":
      return <br />;
    default: {
      const unknown: never = part;
      return String(unknown);
    }
  }
}
