import { Box, Text } from "ink";
import React from "react";
import type { EditorState } from "./line-editor.js";

const h = React.createElement;

export interface PromptBoxProps {
  editor: EditorState;
  /** Shown dimmed while the prompt is empty. */
  placeholder: string;
}

/** The input line: always live, with a block cursor; pasted newlines show as extra lines. */
export function PromptBox({ editor, placeholder }: PromptBoxProps): React.ReactElement {
  const { text, cursor } = editor;
  let content: React.ReactElement;
  if (text === "") {
    content = h(Text, null, h(Text, { inverse: true }, " "), h(Text, { dimColor: true }, placeholder));
  } else {
    const at = text.codePointAt(cursor);
    const under = at === undefined ? "" : String.fromCodePoint(at);
    const after = text.slice(cursor + under.length);
    // A newline under the cursor is drawn as a block at the end of its line, and kept.
    content = h(
      Text,
      null,
      text.slice(0, cursor),
      h(Text, { inverse: true }, under === "" || under === "\n" ? " " : under),
      under === "\n" ? `\n${after}` : after,
    );
  }
  return h(
    Box,
    { borderStyle: "round", borderDimColor: true, paddingX: 1, marginTop: 1 },
    h(Text, { color: "cyan", bold: true }, "> "),
    h(Box, { flexGrow: 1 }, content),
  );
}
