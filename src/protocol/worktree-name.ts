// No zod here: the command line checks `--worktree NAME` with this before loading anything else.

/** Longest worktree name (it names a directory and the branch `spark/NAME`). */
export const MAX_WORKTREE_NAME = 64;

/**
 * A worktree name: letters, digits, `_` and `-`, in parts joined by single dots, starting with a
 * letter or digit, at most {@link MAX_WORKTREE_NAME} characters, not ending in `.lock`. Such a name
 * is one safe path segment (no `/`, `..` or leading dot) and a valid git branch name under `spark/`.
 */
export const WORKTREE_NAME_PATTERN = /^(?!.*\.lock$)[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$/;

/** Why `name` is not a worktree name, or null when it is one. */
export function worktreeNameProblem(name: string): string | null {
  if (name.length > MAX_WORKTREE_NAME) return `a worktree name has at most ${MAX_WORKTREE_NAME} characters`;
  if (!WORKTREE_NAME_PATTERN.test(name)) {
    return (
      "a worktree name is letters, digits, '_' and '-', in parts joined by single dots, starting with " +
      "a letter or digit and not ending in '.lock' (e.g. fix-parser)"
    );
  }
  return null;
}

/** Where a thread works when it was started in a worktree of Spark's (`ThreadInfo.worktree`). */
export interface WorktreeRef {
  name: string;
  /** The branch checked out there: `spark/NAME`. */
  branch: string;
}
