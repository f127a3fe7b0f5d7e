import { Box, Text } from "ink";
import React from "react";
import type { SessionDiff } from "../../protocol/agent.js";
import { RowView } from "./display-row-view.js";
import { diffRows } from "./display-rows.js";

const h = React.createElement;

/** Diff lines `/diff` prints at most; the rest are counted. */
export const MAX_DIFF_VIEW_LINES = 1000;

/** `/diff`: each file the session changed as a coloured unified diff, then what was left out. */
export function SessionDiffView({ diff }: { diff: SessionDiff }): React.ReactElement {
  const added = diff.files.reduce((sum, file) => sum + file.added, 0);
  const removed = diff.files.reduce((sum, file) => sum + file.removed, 0);
  const count = diff.files.length + diff.omitted.length;
  const rows = diffRows(diff.files, { maxLines: MAX_DIFF_VIEW_LINES });
  return h(
    Box,
    { flexDirection: "column", marginTop: 1 },
    count === 0
      ? h(Text, null, "No changes in this session yet.")
      : h(
          Text,
          { bold: true },
          `Session changes: ${count} file${count === 1 ? "" : "s"} `,
          h(Text, { color: "green" }, `+${added}`),
          " ",
          h(Text, { color: "red" }, `-${removed}`),
        ),
    h(
      Box,
      { flexDirection: "column", paddingLeft: 2 },
      rows.map((row, index) => h(RowView, { key: index, row, failed: false, oneLine: false })),
    ),
    diff.omitted.length > 0
      ? h(
          Text,
          { dimColor: true },
          `Not shown (too big, binary or over the bound): ${diff.omitted.join(", ")}`,
        )
      : null,
    ...diff.notes.map((note, index) => h(Text, { key: `note${index}`, dimColor: true }, note)),
  );
}
