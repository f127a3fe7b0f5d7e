import { Box, Text } from "ink";
import React from "react";
import type { StartupState } from "./startup-status.js";

const h = React.createElement;

export interface StartupViewProps {
  state: StartupState;
  /** Messages entered before the session started, in the order they will be sent. */
  pending: readonly string[];
}

/** Above the prompt while the session starts: an open start-up question, and the queued messages. */
export function StartupView({ state, pending }: StartupViewProps): React.ReactElement {
  return h(
    Box,
    { flexDirection: "column" },
    state.phase === "asking"
      ? h(
          Box,
          { flexDirection: "column", marginTop: 1, borderStyle: "round", borderColor: "yellow", paddingX: 1 },
          h(Text, { color: "yellow", bold: true }, state.title),
          h(Text, null, state.details),
          h(
            Text,
            null,
            h(Text, { bold: true }, state.question),
            " ",
            h(Text, { color: "green", bold: true }, "[y]"),
            " yes  ",
            h(Text, { color: "red", bold: true }, "[N]"),
            " no (Enter)",
          ),
        )
      : null,
    pending.length > 0
      ? h(
          Box,
          { flexDirection: "column", marginTop: 1 },
          pending.map((text, index) =>
            h(
              Text,
              { key: index, dimColor: true, wrap: "truncate-end" },
              `queued until ready: ${text.replace(/\s+/g, " ")}`,
            ),
          ),
        )
      : null,
  );
}
