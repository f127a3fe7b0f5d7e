import path from "node:path";
import type { Command } from "commander";
import { SparkWorktrees, worktreesDir } from "../runtime/spark-worktrees.js";
import { sessionsByFolder } from "./worktree-session.js";

const WORKTREE_HELP = `
spark --worktree NAME starts a session in a git worktree of this repository, on its own branch
spark/NAME, made from the current HEAD (spark --worktree alone picks a new name). Sessions in
different worktrees, and in the main tree, edit at once without touching each other's files.
spark --worktree NAME again resumes that worktree's newest session. Worktrees live outside the
repository, in ${worktreesDir()}/<repo>-<hash>/NAME,
so the main tree stays clean; git keeps its own record of them in .git/worktrees.

Examples:
  $ spark --worktree fix-parser           # new worktree and branch spark/fix-parser, or resume it
  $ spark worktree list                   # name, branch, clean or dirty, sessions, path
  $ spark worktree remove fix-parser      # refused while it has uncommitted changes
  $ spark worktree remove fix-parser --force
`;

interface WorktreeFlags {
  cd?: string;
  force?: boolean;
}

export function registerWorktreeCommand(program: Command): void {
  const command = program
    .command("worktree")
    .description("list and remove the git worktrees of spark --worktree sessions")
    .addHelpText("after", WORKTREE_HELP);
  command
    .command("list")
    .description("Spark's worktrees of this repository: name, branch, clean or dirty, sessions, path")
    .option("-C, --cd <dir>", "a directory of the repository (default: the current directory)")
    .action(async (flags: WorktreeFlags) => {
      await list(flags.cd ?? process.cwd());
    });
  command
    .command("remove")
    .description("remove a worktree (its branch stays); refused while it has uncommitted changes")
    .argument("<name>", "the worktree's name (see spark worktree list)")
    .option("-f, --force", "remove it even with uncommitted changes, which are lost", false)
    .option("-C, --cd <dir>", "a directory of the repository (default: the current directory)")
    .action(async (name: string, flags: WorktreeFlags) => {
      const trees = await SparkWorktrees.of(path.resolve(flags.cd ?? process.cwd()));
      const removed = await trees.remove(name, { force: flags.force === true });
      process.stdout.write(
        `Removed worktree ${removed.name} (${removed.path}); branch ${removed.branch} is kept ` +
          `(git branch -D ${removed.branch} deletes it).\n`,
      );
    });
}

async function list(cwd: string): Promise<void> {
  const trees = await SparkWorktrees.of(path.resolve(cwd));
  const worktrees = await trees.list();
  if (worktrees.length === 0) {
    process.stdout.write(
      `No Spark worktrees of ${trees.mainRoot}. Start a session in one with spark --worktree NAME.\n`,
    );
    return;
  }
  const sessions = await sessionsByFolder();
  const rows = await Promise.all(
    worktrees.map(async (worktree) => {
      const state = worktree.missing
        ? "missing"
        : (await trees.changes(worktree)).length > 0
          ? "dirty"
          : "clean";
      const count = sessions.get(worktree.path)?.length ?? 0;
      return [worktree.name, worktree.branch, state, String(count), worktree.path];
    }),
  );
  const header = ["NAME", "BRANCH", "STATE", "SESSIONS", "PATH"];
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  for (const row of [header, ...rows]) {
    process.stdout.write(
      `${row.map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i]!) : cell)).join("  ")}\n`,
    );
  }
}
