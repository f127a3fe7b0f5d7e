import { lstat, readFile } from "node:fs/promises";
import type { SessionDiff } from "../protocol/agent.js";
import { diffText } from "./diff.js";
import type { Workspace } from "./workspace.js";

export type { SessionDiff };

/** Files a session diff shows at most; the rest are named in `omitted`. */
export const MAX_SESSION_DIFF_FILES = 100;
/** Diff lines (context included) a session diff shows at most, over all its files. */
export const MAX_SESSION_DIFF_LINES = 4000;
/** A file bigger than this now is named in `omitted`, not diffed. */
const MAX_DIFFED_FILE_BYTES = 2 * 1024 * 1024;

/**
 * What the session changed: each file its kept edits touched (`originals`, see
 * Checkpoints.originals), from its content before the first edit to its content now, as a line
 * diff; files now as they were are left out. Bounded by {@link MAX_SESSION_DIFF_FILES} and
 * {@link MAX_SESSION_DIFF_LINES}: past them, and for binary or very big files, the path goes to
 * `omitted`.
 */
export async function sessionDiff(
  originals: { files: ReadonlyMap<string, Buffer | null>; unkept: number },
  workspace: Workspace,
): Promise<SessionDiff> {
  const files: SessionDiff["files"] = [];
  const omitted: string[] = [];
  let lines = 0;
  for (const [absolute, before] of originals.files) {
    const path = workspace.relative(absolute);
    const now = await currentContent(absolute);
    if (now === "too big") {
      omitted.push(path);
      continue;
    }
    if (before === null ? now === null : now !== null && before.equals(now)) continue;
    if (before?.includes(0) || now?.includes(0) || files.length >= MAX_SESSION_DIFF_FILES) {
      omitted.push(path);
      continue;
    }
    const diff = diffText(path, before?.toString("utf8") ?? null, now?.toString("utf8") ?? null);
    const size = diff.hunks.reduce((sum, hunk) => sum + hunk.lines.length, 0);
    if (lines + size > MAX_SESSION_DIFF_LINES) {
      omitted.push(path);
      continue;
    }
    lines += size;
    files.push(diff);
  }
  const notes =
    originals.unkept > 0
      ? [
          `${originals.unkept} turn${originals.unkept === 1 ? "'s" : "s'"} edits were too big to keep and are not shown.`,
        ]
      : [];
  return { files, omitted, notes };
}

/** The file's bytes now; null when it is gone; "too big" for one not to diff (big, not a plain file). */
async function currentContent(path: string): Promise<Buffer | null | "too big"> {
  try {
    const info = await lstat(path);
    // A file turned into a symlink (or anything else) since is named, never followed.
    if (!info.isFile() || info.size > MAX_DIFFED_FILE_BYTES) return "too big";
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
