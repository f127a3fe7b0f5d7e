import { execFile } from "node:child_process";
import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { isProtectedName } from "../../workspace.js";

/** Directories never listed or searched, ignored or not (protected ones too: `.git`, `.spark`). */
function skipped(name: string): boolean {
  return name === "node_modules" || isProtectedName(name);
}

export interface ListFilesOptions {
  signal: AbortSignal;
  /** Deepest path depth returned (1: entries of `dir` itself). Default: unlimited. */
  maxDepth?: number;
  /** Stop walking (outside git) once this many entries were found. Default: 200,000. */
  limit?: number;
}

export interface FileListing {
  /** Paths relative to the listed directory, `/`-separated. A file may vanish before it is read. */
  files: string[];
  /** Directories holding listed files (and, outside git, empty ones), relative and `/`-separated. */
  directories: string[];
  /** Whether git chose the files (so .gitignore was respected). */
  git: boolean;
  /** True when `limit` stopped the walk early. */
  truncated: boolean;
}

/**
 * The files under `dir`. In a git work tree git lists them (tracked plus untracked, minus
 * ignored), so .gitignore, .git/info/exclude and the global excludes all apply; elsewhere the tree
 * is walked. `node_modules` and protected names (`.git`, `.spark`) are skipped either way;
 * symlinks are listed, not followed.
 */
export async function listFiles(dir: string, options: ListFilesOptions): Promise<FileListing> {
  const maxDepth = options.maxDepth ?? Number.POSITIVE_INFINITY;
  const fromGit = await gitFiles(dir, options.signal);
  if (fromGit === null) return walk(dir, maxDepth, options.limit ?? 200_000, options.signal);
  const files: string[] = [];
  const directories = new Set<string>();
  for (const file of fromGit) {
    const parts = file.split("/");
    if (parts.some(skipped)) continue;
    for (let depth = 1; depth < parts.length && depth <= maxDepth; depth++) {
      directories.add(parts.slice(0, depth).join("/"));
    }
    if (parts.length <= maxDepth) files.push(file);
  }
  return { files: files.sort(), directories: [...directories].sort(), git: true, truncated: false };
}

/** Files git would show under `dir`, relative to it; null outside a git work tree or without git. */
async function gitFiles(dir: string, signal: AbortSignal): Promise<string[] | null> {
  const [listed, deleted] = await Promise.all([
    git(dir, ["ls-files", "--cached", "--others", "--exclude-standard", "-z"], signal),
    git(dir, ["ls-files", "--deleted", "-z"], signal),
  ]);
  if (listed === null || deleted === null) return null;
  // Tracked files deleted from the work tree are still in the index; an unmerged path is listed
  // once per conflict stage.
  const gone = new Set(deleted);
  return [...new Set(listed)].filter((file) => !gone.has(file));
}

function git(dir: string, args: string[], signal: AbortSignal): Promise<string[] | null> {
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      ["-c", "core.quotepath=off", ...args],
      { cwd: dir, signal, maxBuffer: 256 * 1024 * 1024, encoding: "buffer" },
      (error, stdout) => {
        if (signal.aborted) return reject(signal.reason);
        if (error) return resolve(null);
        resolve(stdout.toString("utf8").split("\0").filter(Boolean));
      },
    );
  });
}

async function walk(
  root: string,
  maxDepth: number,
  limit: number,
  signal: AbortSignal,
): Promise<FileListing> {
  const files: string[] = [];
  const directories: string[] = [];
  let truncated = false;
  const visit = async (relative: string, depth: number): Promise<void> => {
    signal.throwIfAborted();
    let entries: Dirent[];
    try {
      entries = await readdir(relative ? join(root, relative) : root, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (files.length + directories.length >= limit) {
        truncated = true;
        return;
      }
      if (skipped(entry.name)) continue;
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        directories.push(path);
        if (depth < maxDepth) await visit(path, depth + 1);
      } else {
        files.push(path);
      }
    }
  };
  await visit("", 1);
  return { files: files.sort(), directories: directories.sort(), git: false, truncated };
}
