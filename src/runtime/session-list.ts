import { realpath } from "node:fs/promises";
import path from "node:path";
import { listSessions, readSession, sessionsDir } from "../agent/transcript.js";
import type { ThreadItem } from "../protocol/agent.js";
import { SparkWorktrees } from "./spark-worktrees.js";

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
  /** The person's messages (rewound ones not counted). */
  turns: number;
  /** The Spark worktree it works in (`spark --worktree NAME`), if any. */
  worktree?: string;
  file: string;
}

export interface ListSessionsOptions {
  /** The sessions folder. Default: {@link sessionsDir}. */
  dir?: string;
  /** Only the sessions working in this folder (compared as real paths). Default: every workspace. */
  workspace?: string;
  /** With `workspace`, also those working in a folder inside this one (its Spark worktrees). */
  worktrees?: string;
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
  const worktrees = options.worktrees === undefined ? undefined : await realpathOr(options.worktrees);
  const files = (await listSessions(dir)).slice(0, options.scan ?? 200);
  const summaries = await Promise.all(
    files.map(async ({ file, modified }) => {
      try {
        const { thread, items } = await readSession(file);
        const turns = items.filter(isTurnStart).length;
        if (turns === 0) return null;
        if (workspace !== undefined && !(await worksIn(thread.cwd, workspace, worktrees))) return null;
        return {
          id: thread.id,
          title: titleOf(thread.title, items),
          cwd: thread.cwd,
          model: thread.model,
          createdAt: thread.createdAt,
          updatedAt: modified.toISOString(),
          turns,
          ...(thread.worktree ? { worktree: thread.worktree.name } : {}),
          file,
        } satisfies SessionSummary;
      } catch {
        return null;
      }
    }),
  );
  return summaries.filter((summary): summary is SessionSummary => summary !== null);
}

/**
 * The sessions of `workspace` as `spark sessions` and `spark resume` mean it: those working there,
 * and those in its repository's Spark worktrees (which `spark resume` continues in their worktree).
 */
export async function listWorkspaceSessions(
  workspace: string,
  options: { dir?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<SessionSummary[]> {
  const worktrees = await SparkWorktrees.of(workspace, { env: options.env ?? process.env }).then(
    (trees) => trees.dir,
    // Not a git repository: no worktrees.
    () => undefined,
  );
  return listSavedSessions({
    workspace,
    ...(worktrees ? { worktrees } : {}),
    ...(options.dir ? { dir: options.dir } : {}),
  });
}

async function worksIn(cwd: string, workspace: string, worktrees: string | undefined): Promise<boolean> {
  const real = await realpathOr(cwd);
  if (real === workspace) return true;
  if (worktrees === undefined) return false;
  const relative = path.relative(worktrees, real);
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative);
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
