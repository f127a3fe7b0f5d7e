import { realpath } from "node:fs/promises";
import { listSessions, readSession, sessionsDir } from "../agent/transcript.js";
import { SparkWorktrees } from "../runtime/spark-worktrees.js";
import type { AgentFlags } from "./agent-flags.js";

/** Transcripts read at most to find a worktree's sessions (the newest ones). */
const MAX_SESSIONS_READ = 1000;

/**
 * `spark --worktree [NAME]`: opens the worktree (made from this directory's HEAD when new) and
 * returns the flags that run the session there. A worktree that exists is resumed: its newest
 * session continues (`resumeFile`), or a new one starts when it has none.
 */
export async function enterWorktree(
  flags: AgentFlags,
  options: {
    /** Continue the worktree's newest session (the terminal UI); false: `spark exec`. Default: true. */
    resume?: boolean;
    env?: NodeJS.ProcessEnv;
    say?: (line: string) => void;
  } = {},
): Promise<{ flags: AgentFlags; resumeFile?: string }> {
  const cwd = flags.cd ?? process.cwd();
  const trees = await SparkWorktrees.of(cwd, options.env ? { env: options.env } : {});
  const name = typeof flags.worktree === "string" ? flags.worktree : undefined;
  const { worktree, created } = await trees.open(name, { base: cwd });
  const resume = options.resume !== false && !created;
  const newest = resume ? (await sessionsIn(worktree.path, options.env))[0] : undefined;
  const say = options.say ?? ((line: string) => process.stderr.write(`${line}\n`));
  say(
    `spark: ${created ? "new worktree" : "worktree"} ${worktree.name} (branch ${worktree.branch}) at ${worktree.path}` +
      (newest ? `, resuming session ${newest.id}` : ""),
  );
  const { worktree: _, ...rest } = flags;
  return {
    flags: { ...rest, cd: worktree.path, inWorktree: { name: worktree.name, branch: worktree.branch } },
    ...(newest ? { resumeFile: newest.file } : {}),
  };
}

/** The saved sessions whose folder is `dir` (a real path), newest first. */
export async function sessionsIn(
  dir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ id: string; file: string }[]> {
  return (await sessionsByFolder(env)).get(dir) ?? [];
}

/** Saved sessions with a user message, by the real path of their folder, newest first. */
export async function sessionsByFolder(
  env: NodeJS.ProcessEnv = process.env,
): Promise<Map<string, { id: string; file: string }[]>> {
  const sessions = (await listSessions(sessionsDir(env))).slice(0, MAX_SESSIONS_READ);
  const byFolder = new Map<string, { id: string; file: string }[]>();
  for (const session of sessions) {
    const saved = await readSession(session.file).catch(() => null);
    if (!saved?.items.some((item) => item.type === "user_message")) continue;
    const cwd = await realpath(saved.thread.cwd).catch(() => saved.thread.cwd);
    const list = byFolder.get(cwd) ?? [];
    list.push({ id: session.id, file: session.file });
    byFolder.set(cwd, list);
  }
  return byFolder;
}
