import { Box, type RenderOptions, render, Text, useInput } from "ink";
import React, { useState } from "react";
import type { SessionSummary } from "../../runtime/session-list.js";
import { relativeTime } from "../relative-time.js";
import { pickerKeyOf } from "./key-bindings.js";

const h = React.createElement;

/** Rows shown at once; the list scrolls with the selection. */
const VISIBLE = 10;

export interface SessionPickerProps {
  sessions: readonly SessionSummary[];
  /** Called once: the chosen session, or null when the person cancelled (Esc, Ctrl+C). */
  onDone: (chosen: SessionSummary | null) => void;
  now?: Date;
}

/** `spark resume`'s list: Up/Down move, Enter continues the session, Esc cancels. */
export function SessionPicker({ sessions, onDone, now }: SessionPickerProps): React.ReactElement {
  const [index, setIndex] = useState(0);
  const [done, setDone] = useState(false);
  useInput((input, key) => {
    if (done) return;
    const finish = (chosen: SessionSummary | null) => {
      setDone(true);
      onDone(chosen);
    };
    if (key.ctrl && input === "c") return finish(null);
    const pick = pickerKeyOf(key);
    if (pick === "up") setIndex((index - 1 + sessions.length) % sessions.length);
    else if (pick === "down") setIndex((index + 1) % sessions.length);
    else if (pick === "enter") finish(sessions[index]!);
    else if (pick === "escape") finish(null);
  });
  const first = Math.max(0, Math.min(index - VISIBLE + 1, sessions.length - VISIBLE));
  const shown = sessions.slice(first, first + VISIBLE);
  // Aligned columns: the title, when, turns, and the id's start (which `spark resume` takes too).
  const rows = sessions.map((session) => ({
    title: session.title,
    when: relativeTime(new Date(session.updatedAt), now),
    turns: `${session.turns} turn${session.turns === 1 ? "" : "s"}`,
  }));
  const width = (column: "title" | "when" | "turns") => Math.max(...rows.map((row) => row[column].length));
  const [titleWidth, whenWidth, turnsWidth] = [width("title"), width("when"), width("turns")];
  return h(
    Box,
    { flexDirection: "column" },
    h(Text, { bold: true }, "Resume which session? (Up/Down, Enter; Esc cancels)"),
    ...shown.map((session, offset) => {
      const selected = first + offset === index;
      const row = rows[first + offset]!;
      const details = `  ${row.when.padEnd(whenWidth)}  ${row.turns.padEnd(turnsWidth)}  ${session.id.slice(0, 12)}`;
      return h(
        Text,
        { key: session.id, wrap: "truncate-end", ...(selected ? { color: "cyan" } : {}) },
        selected ? "> " : "  ",
        row.title.padEnd(titleWidth),
        h(Text, { dimColor: true }, details),
      );
    }),
    sessions.length > VISIBLE ? h(Text, { dimColor: true }, `  ${index + 1} of ${sessions.length}`) : null,
  );
}

/** Shows the picker on the terminal until the person chooses or cancels; it leaves no trace. */
export async function pickSession(
  sessions: readonly SessionSummary[],
  io: { stdin?: NodeJS.ReadStream; stdout?: NodeJS.WriteStream; ink?: Partial<RenderOptions> } = {},
): Promise<SessionSummary | null> {
  let resolve: (chosen: SessionSummary | null) => void = () => {};
  const chosen = new Promise<SessionSummary | null>((done) => {
    resolve = done;
  });
  const instance = render(h(SessionPicker, { sessions, onDone: resolve }), {
    stdout: io.stdout ?? process.stdout,
    stdin: io.stdin ?? process.stdin,
    exitOnCtrlC: false,
    // Nothing logs while it is up; tests pass `debug: true` (each write a whole frame).
    patchConsole: false,
    ...io.ink,
  });
  const result = await chosen;
  instance.clear();
  instance.unmount();
  await instance.waitUntilExit();
  return result;
}
