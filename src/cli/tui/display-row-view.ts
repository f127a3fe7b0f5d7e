import { Text } from "ink";
import React from "react";
import type { DisplayRow } from "./display-rows.js";

const h = React.createElement;

/** One row of a diff or of a command's output, coloured: green added, red removed lines. */
export function RowView({
  row,
  failed,
  oneLine,
}: {
  row: DisplayRow;
  failed: boolean;
  oneLine: boolean;
}): React.ReactElement {
  const line = oneLine ? { wrap: "truncate-end" as const } : {};
  switch (row.kind) {
    case "file":
      return h(
        Text,
        line,
        h(Text, { bold: true }, row.path),
        " ",
        h(Text, { color: "green" }, `+${row.added}`),
        " ",
        h(Text, { color: "red" }, `-${row.removed}`),
        row.label ? h(Text, { dimColor: true }, ` (${row.label})`) : null,
      );
    case "hunk":
      return h(Text, { ...line, color: "cyan", dimColor: true }, row.text);
    case "add":
      return h(Text, { ...line, color: "green" }, row.text);
    case "remove":
      return h(Text, { ...line, color: "red" }, row.text);
    case "context":
      return h(Text, { ...line, dimColor: true }, row.text);
    case "output":
      return h(Text, { ...line, ...(failed ? { color: "red" } : { dimColor: true }) }, row.text || " ");
    case "omitted":
      return h(Text, { ...line, dimColor: true, italic: true }, row.text);
    default: {
      const unknown: never = row;
      return unknown;
    }
  }
}
