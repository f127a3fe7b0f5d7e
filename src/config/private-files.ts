import { randomBytes } from "node:crypto";
import { chmod, lstat, mkdir, open, readFile, rename, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/**
 * Where Spark keeps per-user state (server keys, trusted projects): `$SPARK_HOME` when set (as
 * sessions and models do), else `$XDG_STATE_HOME/spark`, else `~/.local/state/spark`.
 */
export function sparkStateDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SPARK_HOME) return env.SPARK_HOME;
  const base = env.XDG_STATE_HOME || path.join(os.homedir(), ".local", "state");
  return path.join(base, "spark");
}

/**
 * Creates `dir` (and its parents) readable only by the user (0700). An existing directory is
 * tightened to 0700; one that is a symlink or belongs to another user is refused.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const stat = await lstat(dir);
  if (!stat.isDirectory()) throw new Error(`${dir} is not a directory.`);
  if (process.getuid && stat.uid !== process.getuid()) {
    throw new Error(`${dir} belongs to another user; refusing to keep secrets there.`);
  }
  if ((stat.mode & 0o077) !== 0) await chmod(dir, 0o700);
}

/**
 * Writes `text` to `file` atomically, readable only by the user: a new file is created with mode
 * 0600 (never a wider mode first) in a 0700 directory, then renamed over `file`.
 */
export async function writePrivateFile(file: string, text: string): Promise<void> {
  const dir = path.dirname(file);
  await ensurePrivateDir(dir);
  const temp = path.join(dir, `.${path.basename(file)}.${randomBytes(6).toString("hex")}.tmp`);
  const handle = await open(temp, "wx", 0o600);
  try {
    await handle.writeFile(text, "utf8");
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** The file's text, or null when it does not exist. */
export async function readIfExists(file: string): Promise<string | null> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}
