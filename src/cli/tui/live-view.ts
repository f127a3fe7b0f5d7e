import { Box, Text, useWindowSize } from "ink";
import React from "react";
import { type ApprovalRequestEvent, sandboxLabel } from "../../protocol/agent.js";
import type { ConversationView } from "./conversation-store.js";
import { AgentText, ToolCallView } from "./entry-view.js";

const h = React.createElement;

/**
 * What is still changing, between the finished conversation and the prompt: the partial line the
 * model is typing, tools running, a command waiting for approval, and queued messages.
 */
export function LiveView({ view }: { view: ConversationView }): React.ReactElement {
  const { columns, rows } = useWindowSize();
  const approval = view.approvals[0];
  return h(
    Box,
    { flexDirection: "column" },
    view.streaming && view.streaming.text !== ""
      ? h(AgentText, {
          text: tail(view.streaming.text, columns * Math.max(4, rows - 12)),
          fenced: view.streaming.fenced,
          marginTop: view.streaming.continued ? 0 : 1,
        })
      : null,
    view.running.map((item) =>
      h(ToolCallView, { key: item.id, item, liveRows: liveRowsEach(rows, view.running.length) }),
    ),
    approval
      ? h(
          Box,
          { flexDirection: "column", marginTop: 1, borderStyle: "round", borderColor: "yellow", paddingX: 1 },
          ...approvalLines(approval),
          h(
            Text,
            null,
            h(Text, { color: "green", bold: true }, "[y]"),
            " approve  ",
            h(Text, { color: "red", bold: true }, "[n]"),
            " deny",
            view.approvals.length > 1
              ? h(Text, { dimColor: true }, `  (${view.approvals.length - 1} more waiting)`)
              : null,
          ),
        )
      : null,
    view.queued.length > 0
      ? h(
          Box,
          { flexDirection: "column", marginTop: 1 },
          view.queued.map((text, index) =>
            h(
              Text,
              { key: index, dimColor: true, wrap: "truncate-end" },
              `queued: ${text.replace(/\s+/g, " ")}`,
            ),
          ),
        )
      : null,
  );
}

/** The question and what it would do: a command with its directory and sandbox, or an MCP call. */
function approvalLines(approval: ApprovalRequestEvent): React.ReactElement[] {
  if (approval.kind === "mcp") {
    return [
      h(Text, { key: "q", color: "yellow", bold: true }, "Call this MCP tool?"),
      h(Text, { key: "t", bold: true }, `${approval.server} · ${approval.tool}`),
      h(Text, { key: "a", dimColor: true, wrap: "truncate-end" }, approval.arguments),
    ];
  }
  return [
    h(Text, { key: "q", color: "yellow", bold: true }, "Run this command?"),
    h(Text, { key: "t", bold: true }, `$ ${approval.command}`),
    h(Text, { key: "c", dimColor: true }, `in ${approval.cwd}`),
    h(
      Text,
      {
        key: "s",
        ...(approval.sandbox === "danger-full-access" ? { color: "red", bold: true } : { dimColor: true }),
      },
      sandboxLabel(approval.sandbox),
    ),
  ];
}

/** Rows each running tool may show (a patch being written): the live part must fit the screen. */
function liveRowsEach(screenRows: number, running: number): number {
  return Math.max(3, Math.floor((screenRows - 12) / Math.max(1, running)));
}

/**
 * The end of a very long unfinished line: the live part must stay shorter than the screen, or
 * the terminal can no longer redraw it in place.
 */
function tail(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `...${text.slice(text.length - maxChars + 3)}`;
}
