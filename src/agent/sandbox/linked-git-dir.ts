import { constants } from "node:fs";
import { lstat, open, realpath } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve } from "node:path";

/** Bytes of a `.git` file, `gitdir` or `commondir` file read at most (each is one short line). */
const MAX_LINK_BYTES = 4096;

/**
 * The git directory a linked worktree at `root` works through: where its `.git` file points
 * (`gitdir: <common>/worktrees/NAME`), resolved to the repository's common git directory. Null
 * when `root/.git` is not such a file, or the repository does not name `root` back as one of its
 * worktrees (git's own check), so a `.git` file pointing anywhere else binds nothing.
 *
 * Commands in the worktree need it to read the repository (`git status`, `git log`, `git diff`); the
 * sandbox binds it read-only at its own path, as it keeps the main tree's `.git` read-only, which
 * also makes it visible where the repository lives under `/tmp` (the sandbox's `/tmp` is private).
 */
export async function linkedGitDir(root: string): Promise<string | null> {
  try {
    const dotGit = join(root, ".git");
    if (!(await lstat(dotGit)).isFile()) return null;
    const link = /^gitdir: (.+)$/m.exec(await readSmall(dotGit))?.[1]?.trim();
    if (!link) return null;
    const gitDir = await realpath(isAbsolute(link) ? link : resolve(root, link));
    // `gitdir` there names the worktree's `.git` file back.
    const back = (await readSmall(join(gitDir, "gitdir"))).trim();
    if ((await realpath(back)) !== (await realpath(dotGit))) return null;
    const common = (await readSmall(join(gitDir, "commondir"))).trim();
    const commonDir = await realpath(isAbsolute(common) ? common : resolve(gitDir, common));
    // The worktree's own git dir lies inside the common one (`worktrees/NAME`).
    return dirname(dirname(gitDir)) === commonDir ? commonDir : null;
  } catch {
    return null;
  }
}

/** A link file's text; never reads past {@link MAX_LINK_BYTES} (a longer file is no link). */
async function readSmall(file: string): Promise<string> {
  // Non-blocking: a FIFO in place of a link file must not hold the command up.
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const buffer = Buffer.alloc(MAX_LINK_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    if (bytesRead > MAX_LINK_BYTES) throw new Error(`${file} is too long for a git link file`);
    return buffer.toString("utf8", 0, bytesRead);
  } finally {
    await handle.close();
  }
}
