import { Box, Text } from "ink";
import React from "react";
import { patchPreviewOf } from "../../client-core/streaming-patch.js";
import { styleAgentText } from "./agent-markdown.js";
import type { Entry, Tone } from "./conversation-store.js";
import { RowView } from "./display-row-view.js";
import { type DisplayRow, diagnosticRows, diffRows, outputRows, previewRows } from "./display-rows.js";
import { McpServersView } from "./mcp-servers-view.js";
import { SessionDiffView } from "./session-diff-view.js";
import { firstLine, summarizeToolCall, type ToolCallItem } from "./tool-summary.js";

const h = React.createElement;

/** Bullet in front of tool calls. */
export const BULLET = "•";

/** One finished entry of the conversation. */
export function EntryView({ entry }: { entry: Entry }): React.ReactElement {
  switch (entry.kind) {
    case "user":
      return h(
        Box,
        { marginTop: 1 },
        h(Text, { color: "cyan", bold: true }, entry.steer ? "> steer: " : "> "),
        h(Text, { bold: true }, entry.text),
      );
    case "agent":
      return h(AgentText, { text: entry.text, fenced: entry.fenced, marginTop: entry.first ? 1 : 0 });
    case "tool":
      return h(ToolCallView, { item: entry.item });
    case "notice":
      return h(Box, { marginTop: 1 }, h(Text, toneStyle(entry.tone), entry.text));
    case "mcp":
      return h(McpServersView, { servers: entry.servers });
    case "diff":
      return h(SessionDiffView, { diff: entry.diff });
    default: {
      const unknown: never = entry;
      return unknown;
    }
  }
}

/** Agent text with light Markdown styling (see {@link styleAgentText}). */
export function AgentText({
  text,
  fenced,
  marginTop,
}: {
  text: string;
  fenced: string | null;
  marginTop: number;
}): React.ReactElement {
  // One text node for all the lines, and plain runs as bare strings: a node per line and per run
  // cost more to lay out and draw than their text, for every chunk the model writes.
  const runs: React.ReactNode[] = [];
  styleAgentText(text, fenced).forEach((spans, index) => {
    if (index > 0) runs.push("\n");
    if (spans.length === 0) runs.push(" ");
    for (const span of spans)
      runs.push(span.style ? h(Text, { key: runs.length, ...span.style }, span.text) : span.text);
  });
  return h(Box, { marginTop }, h(Text, null, ...runs));
}

export function toneStyle(tone: Tone): { color?: string; dimColor?: boolean } {
  switch (tone) {
    case "dim":
      return { dimColor: true };
    case "info":
      return {};
    case "warn":
      return { color: "yellow" };
    case "error":
      return { color: "red" };
    default: {
      const unknown: never = tone;
      return unknown;
    }
  }
}

/**
 * A tool call: a one-line summary with a coloured bullet (yellow running, green done, red failed),
 * then a patch's diff, or a command's exit code and the first and last lines of its output. While
 * the model writes an `apply_patch`, the patch so far, as a diff: with `liveRows`, its last rows
 * only, each cut to one screen line, so the live part of the screen stays shorter than the screen.
 */
export function ToolCallView({
  item,
  liveRows,
}: {
  item: ToolCallItem;
  liveRows?: number;
}): React.ReactElement {
  const colour = item.status === "running" ? "yellow" : item.status === "completed" ? "green" : "red";
  const display = item.display;
  const rows: DisplayRow[] = [];
  let exit: React.ReactElement | null = null;
  const preview = patchPreviewOf(item);
  if (preview) rows.push(...previewRows(preview, liveRows === undefined ? {} : { maxRows: liveRows }));
  else if (display?.kind === "diff") rows.push(...diffRows(display.files), ...diagnosticRows(display));
  else if (display?.kind === "command") {
    exit = exitLabel(display.exitCode);
    rows.push(...outputRows(display.output));
  } else if (item.status === "failed" && item.output) {
    rows.push({ kind: "output", text: firstLine(item.output) });
  }
  return h(
    Box,
    { flexDirection: "column", marginTop: 1 },
    h(
      Text,
      null,
      h(Text, { color: colour }, `${BULLET} `),
      // The diff's own file headers carry the counts.
      h(Text, { bold: true }, summarizeToolCall(item, { diffCounts: false })),
      exit ? h(Text, null, "  ", exit) : null,
      item.status === "running"
        ? h(Text, { dimColor: true }, preview && !preview.complete ? "  writing..." : "  running...")
        : null,
    ),
    rows.length > 0
      ? h(
          Box,
          { flexDirection: "column", paddingLeft: 2 },
          rows.map((row, index) =>
            h(RowView, {
              key: index,
              row,
              failed: item.status === "failed",
              oneLine: liveRows !== undefined,
            }),
          ),
        )
      : null,
  );
}

function exitLabel(code: number | null): React.ReactElement {
  if (code === 0) return h(Text, { color: "green" }, "exit 0");
  if (code === null) return h(Text, { color: "yellow" }, "killed");
  return h(Text, { color: "red" }, `exit ${code}`);
}
