import path from "node:path";
import type { Command } from "commander";
import { sessionsDir } from "../agent/transcript.js";
import { listSavedSessions, listWorkspaceSessions, type SessionSummary } from "../runtime/session-list.js";
import { integer } from "./integer-option.js";
import { relativeTime } from "./relative-time.js";

interface SessionsFlags {
  json: boolean;
  all: boolean;
  limit: number;
  cd?: string;
}

export function registerSessionsCommand(program: Command): void {
  program
    .command("sessions")
    .description("list this workspace's saved sessions, newest first (continue one with spark resume ID)")
    .option("--json", "print the list as one JSON array", false)
    .option("--all", "every workspace's sessions, not only this one's", false)
    .option("-n, --limit <n>", "how many to show", integer(1, 200), 20)
    .option("-C, --cd <dir>", "workspace directory (default: the current directory)")
    .action(async (flags: SessionsFlags) => {
      const workspace = path.resolve(flags.cd ?? process.cwd());
      const sessions = (await (flags.all ? listSavedSessions() : listWorkspaceSessions(workspace))).slice(
        0,
        flags.limit,
      );
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify(
            sessions.map(({ file: _, ...session }) => session),
            null,
            2,
          )}\n`,
        );
        return;
      }
      if (sessions.length === 0) {
        process.stdout.write(
          flags.all
            ? `No saved sessions (in ${sessionsDir()}).\n`
            : `No saved sessions for ${workspace}. Start one with spark; spark sessions --all lists every workspace's.\n`,
        );
        return;
      }
      process.stdout.write(sessionsTable(sessions, { workspaces: flags.all }));
    });
}

/** The text list: a header, then one line a session (id, when, turns, title; with the folder for `--all`). */
export function sessionsTable(
  sessions: readonly SessionSummary[],
  options: { workspaces: boolean; now?: Date },
): string {
  const rows = sessions.map((session) => [
    session.id,
    relativeTime(new Date(session.updatedAt), options.now),
    String(session.turns),
    ...(options.workspaces ? [session.cwd] : []),
    session.worktree ? `${session.title} (worktree ${session.worktree})` : session.title,
  ]);
  const header = ["ID", "WHEN", "TURNS", ...(options.workspaces ? ["WORKSPACE"] : []), "TITLE"];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const line = (cells: string[]) =>
    `${cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!)))
      .join("  ")}\n`;
  return [header, ...rows].map(line).join("");
}
