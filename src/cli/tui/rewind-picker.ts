import { Box, Text } from "ink";
import React from "react";
import type { RewindPoint } from "../../client-core/rewind-points.js";
import type { RewindRestore } from "../../protocol/agent.js";

const h = React.createElement;

/** `/rewind`: first a turn (its user message, newest first), then what to take back. */
export type RewindPicker =
  | { step: "turn"; points: RewindPoint[]; index: number }
  /** `turn`: the index of the chosen turn in `points`. */
  | { step: "restore"; points: RewindPoint[]; turn: number; index: number };

export const RESTORE_CHOICES: readonly { restore: RewindRestore; label: string }[] = [
  { restore: "both", label: "code and conversation" },
  { restore: "conversation", label: "conversation only (the files stay as they are)" },
  { restore: "code", label: "code only (the conversation stays)" },
];

export type PickerKey = "up" | "down" | "enter" | "escape";

/**
 * One key in the picker: the next state (null: closed), and the rewind chosen when Enter picks
 * what to take back.
 */
export function pickerKey(
  state: RewindPicker,
  key: PickerKey,
): { state: RewindPicker | null; chosen?: { point: RewindPoint; restore: RewindRestore } } {
  const size = state.step === "turn" ? state.points.length : RESTORE_CHOICES.length;
  switch (key) {
    case "up":
      return { state: { ...state, index: (state.index - 1 + size) % size } };
    case "down":
      return { state: { ...state, index: (state.index + 1) % size } };
    case "escape":
      return {
        state: state.step === "turn" ? null : { step: "turn", points: state.points, index: state.turn },
      };
    case "enter":
      if (state.step === "turn")
        return { state: { step: "restore", points: state.points, turn: state.index, index: 0 } };
      return {
        state: null,
        chosen: { point: state.points[state.turn]!, restore: RESTORE_CHOICES[state.index]!.restore },
      };
    default: {
      const unknown: never = key;
      throw new Error(`Unknown key ${String(unknown)}`);
    }
  }
}

/** The picker, drawn above the prompt. */
export function RewindPickerView({ state }: { state: RewindPicker }): React.ReactElement {
  const rows =
    state.step === "turn"
      ? state.points.map((point) => {
          const text = point.text.split("\n")[0]!.slice(0, 70);
          const files = point.paths.length > 0 ? `  changed ${point.paths.join(", ")}` : "  no files changed";
          return { label: text, detail: files };
        })
      : RESTORE_CHOICES.map((choice) => ({ label: choice.label, detail: "" }));
  const title =
    state.step === "turn"
      ? "Rewind to before which message? (Up/Down, Enter; Esc cancels)"
      : `Rewind to before "${state.points[state.turn]!.text.split("\n")[0]!.slice(0, 50)}": take back what? (Enter; Esc goes back)`;
  return h(
    Box,
    { flexDirection: "column", marginTop: 1 },
    h(Text, { bold: true }, title),
    ...rows.map((row, index) =>
      h(
        Text,
        { key: String(index), ...(index === state.index ? { color: "cyan" } : {}) },
        index === state.index ? "> " : "  ",
        row.label,
        h(Text, { dimColor: true }, row.detail),
      ),
    ),
  );
}
