import { Component, type ComponentChildren } from "preact";
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
  // Blocks are keyed by their index: a finished block keeps its place while text streams in after it.
  return (
    <div class="markdown">
      {stream.current.update(text).map((block, index) => (
        <BlockView key={index} block={block} />
      ))}
    </div>
  );
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

export function CodeBlock({ code, language }: { code: string; language: string }) {
  return (
    <pre class="code" data-language={language || undefined}>
      {language ? <span class="code-language">{language}</span> : null}
      <code>
        {highlight(code, language).map(({ kind, text }, index) =>
          kind === "plain" ? (
            text
          ) : (
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
  return blocks.map((block, index) => <BlockView key={index} block={block} />);
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
            <tr>
              {block.header.map((cell, index) => (
                <th key={index} style={alignment(block.align[index])}>
                  {renderInline(cell)}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {block.rows.map((row, at) => (
              <tr key={at}>
                {row.map((cell, index) => (
                  <td key={index} style={alignment(block.align[index])}>
                    {renderInline(cell)}
                  </td>
                ))}
              </tr>
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

function alignment(align: TableAlign | undefined): { textAlign: string } | undefined {
  return align ? { textAlign: align } : undefined;
}

function renderInline(inline: readonly MarkdownInline[]): ComponentChildren {
  return inline.map((part, index) => {
    switch (part.kind) {
      case "text":
        return part.text;
      case "code":
        return <code key={index}>{part.text}</code>;
      case "strong":
        return <strong key={index}>{renderInline(part.children)}</strong>;
      case "em":
        return <em key={index}>{renderInline(part.children)}</em>;
      case "del":
        return <del key={index}>{renderInline(part.children)}</del>;
      case "link":
        return (
          <a key={index} href={part.href} target="_blank" rel="noopener noreferrer">
            {renderInline(part.children)}
          </a>
        );
      case "break":
        return <br key={index} />;
      default: {
        const unknown: never = part;
        return String(unknown);
      }
    }
  });
}
