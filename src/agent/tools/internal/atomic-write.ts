import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * A file written beside its destination and not yet visible there. Staging every file of a change
 * first and committing after means a failure while writing (disk full, permissions) leaves every
 * destination untouched.
 */
export interface StagedFile {
  readonly path: string;
  readonly tempPath: string;
}

export interface StageOptions {
  /** Permission bits for the file. Default: the process's default for new files. */
  mode?: number;
  /** Create missing parent directories. Default: false. */
  createParents?: boolean;
}

/** Writes `content` to a temp file in the destination's directory (so the rename stays atomic). */
export async function stageFile(
  path: string,
  content: Buffer,
  options: StageOptions = {},
): Promise<StagedFile> {
  const dir = dirname(path);
  if (options.createParents) await mkdir(dir, { recursive: true });
  const tempPath = join(dir, `.${basename(path)}.spark-${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(tempPath, content, { flag: "wx" });
    // chmod rather than writeFile's mode: the umask must not strip bits the original file had.
    if (options.mode !== undefined) await chmod(tempPath, options.mode & 0o7777);
  } catch (error) {
    await rm(tempPath, { force: true });
    throw error;
  }
  return { path, tempPath };
}

/** Makes a staged file visible at its destination, atomically replacing what was there. */
export async function commitStaged(staged: StagedFile): Promise<void> {
  await rename(staged.tempPath, staged.path);
}

/** Removes staged files that will not be committed. Never throws. */
export async function discardStaged(staged: readonly StagedFile[]): Promise<void> {
  await Promise.all(staged.map((file) => rm(file.tempPath, { force: true }).catch(() => {})));
}

/** The file's bytes, or null when it does not exist (a patch may add or delete it). */
export async function readIfExists(path: string): Promise<Buffer | null> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
