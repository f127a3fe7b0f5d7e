import type { ComponentChildren } from "preact";
import { highlight } from "./highlight.js";
import { type Block, type Inline, parseMarkdown } from "./markdown-parse.js";

/** Agent text as Markdown with highlighted code; rendered as elements, never as HTML. */
export function Markdown({ text }: { text: string }) {
  // Blocks are keyed by their first line: stable while more text streams in after them.
  return <div class="markdown">{parseMarkdown(text).map((block) => renderBlock(block, block.line))}</div>;
}

export function CodeBlock({ code, language }: { code: string; language: string }) {
  return (
    <pre class="code" data-language={language || undefined}>
      {language ? <span class="code-language">{language}</span> : null}
      <code>
        {withOffsets(highlight(code, language)).map(({ at, kind, text }) =>
          kind === "plain" ? (
            text
          ) : (
            <span key={at} class={`tok-${kind}`}>
              {text}
            </span>
          ),
        )}
      </code>
    </pre>
  );
}

/** Each item with its offset in the whole, a key that stays put as text is appended. */
function withOffsets<T extends { text: string }>(items: T[]): (T & { at: number })[] {
  let at = 0;
  return items.map((item) => {
    const placed = { ...item, at };
    at += item.text.length;
    return placed;
  });
}

function renderBlock(block: Block, key: number): ComponentChildren {
  switch (block.kind) {
    case "heading": {
      const Tag = `h${Math.min(block.level + 2, 6)}` as "h3";
      return <Tag key={key}>{renderInline(block.inline)}</Tag>;
    }
    case "paragraph":
      return <p key={key}>{renderInline(block.inline)}</p>;
    case "code":
      return <CodeBlock key={key} code={block.text} language={block.language} />;
    case "list": {
      const items = block.items.map((item) => <li key={item.line}>{renderInline(item.inline)}</li>);
      return block.ordered ? (
        <ol key={key} start={block.start}>
          {items}
        </ol>
      ) : (
        <ul key={key}>{items}</ul>
      );
    }
    case "quote":
      return <blockquote key={key}>{renderInline(block.inline)}</blockquote>;
    case "rule":
      return <hr key={key} />;
    default: {
      const unknown: never = block;
      return String(unknown);
    }
  }
}

function renderInline(inline: Inline[]): ComponentChildren {
  return inline.map((part) => {
    switch (part.kind) {
      case "text":
        return part.text;
      case "code":
        return <code key={part.at}>{part.text}</code>;
      case "strong":
        return <strong key={part.at}>{renderInline(part.children)}</strong>;
      case "em":
        return <em key={part.at}>{renderInline(part.children)}</em>;
      case "link":
        return (
          <a key={part.at} href={part.href} target="_blank" rel="noopener noreferrer">
            {renderInline(part.children)}
          </a>
        );
      default: {
        const unknown: never = part;
        return String(unknown);
      }
    }
  });
}
