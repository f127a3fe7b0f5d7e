import { realpath } from "node:fs/promises";
import { listSessions, readSession, sessionsDir } from "../agent/transcript.js";
import type { ThreadItem } from "../protocol/agent.js";

/** A saved session as `spark sessions` and `spark resume`'s picker list it. */
export interface SessionSummary {
  id: string;
  /** The first line of its first message (or the name it was given), at most 60 characters. */
  title: string;
  /** The folder it works in. */
  cwd: string;
  model: string;
  createdAt: string;
  /** When its transcript last changed (ISO 8601). */
  updatedAt: string;
  /** The person's messages that started turns (steers and rewound turns not counted). */
  turns: number;
  file: string;
}

export interface ListSessionsOptions {
  /** The sessions folder. Default: {@link sessionsDir}. */
  dir?: string;
  /** Only the sessions working in this folder (compared as real paths). Default: every workspace. */
  workspace?: string;
  /** The newest transcripts read at most (each is read whole). Default: 200. */
  scan?: number;
}

/**
 * Saved sessions with at least one message, most recently used first. A transcript that cannot be
 * read is left out (a list is no place to fail on another session's damage).
 */
export async function listSavedSessions(options: ListSessionsOptions = {}): Promise<SessionSummary[]> {
  const dir = options.dir ?? sessionsDir();
  const workspace = options.workspace === undefined ? undefined : await realpathOr(options.workspace);
  const files = (await listSessions(dir)).slice(0, options.scan ?? 200);
  const summaries = await Promise.all(
    files.map(async ({ file, modified }) => {
      try {
        const { thread, items } = await readSession(file);
        const turns = items.filter(isTurnStart).length;
        if (turns === 0) return null;
        if (workspace !== undefined && (await realpathOr(thread.cwd)) !== workspace) return null;
        return {
          id: thread.id,
          title: titleOf(thread.title, items),
          cwd: thread.cwd,
          model: thread.model,
          createdAt: thread.createdAt,
          updatedAt: modified.toISOString(),
          turns,
          file,
        } satisfies SessionSummary;
      } catch {
        return null;
      }
    }),
  );
  return summaries.filter((summary): summary is SessionSummary => summary !== null);
}

function isTurnStart(item: ThreadItem): boolean {
  return item.type === "user_message";
}

/** The thread's own title, or its first message's first line while it has none. */
function titleOf(title: string, items: readonly ThreadItem[]): string {
  if (title && title !== "New session") return oneLine(title);
  const first = items.find((item) => item.type === "user_message");
  return first?.type === "user_message" ? oneLine(first.text) : oneLine(title);
}

function oneLine(text: string): string {
  const line = text.trim().split("\n")[0]!.trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

async function realpathOr(dir: string): Promise<string> {
  try {
    return await realpath(dir);
  } catch {
    return dir;
  }
}
