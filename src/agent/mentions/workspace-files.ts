import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import path from "node:path";
import { isProtectedName } from "../workspace.js";

/** Files a listing holds at most: a bigger workspace is listed in part. */
export const MAX_LISTED_FILES = 50_000;
/** Folders a walk (no git) skips besides `.git` and `.spark`: nobody mentions what is in them. */
const SKIPPED_FOLDERS = new Set(["node_modules"]);
/** How long a listing is reused before the workspace is listed again. */
const LISTING_TTL_MS = 5_000;

/**
 * The workspace's files as `/`-separated paths relative to `root`, for `@` mentions: git's tracked
 * and untracked-but-not-ignored files in a repository, else a walk that skips `.git`, `.spark` and
 * `node_modules` and follows no symlinks. Never more than {@link MAX_LISTED_FILES}; never a path
 * through `.git` or `.spark` (see isProtectedName).
 */
export async function listWorkspaceFiles(root: string, signal?: AbortSignal): Promise<string[]> {
  const listed = (await gitFiles(root, signal)) ?? (await walkFiles(root, signal));
  return listed.filter((file) => !file.split("/").some(isProtectedName)).slice(0, MAX_LISTED_FILES);
}

function gitFiles(root: string, signal?: AbortSignal): Promise<string[] | null> {
  return new Promise((resolve) => {
    execFile(
      "git",
      ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
      // 100 bytes a path on average is plenty; a bigger listing is not a workspace to walk anyway.
      { cwd: root, maxBuffer: MAX_LISTED_FILES * 100, encoding: "utf8", signal, windowsHide: true },
      (error, stdout) => {
        if (error) return resolve(null);
        resolve([...new Set(stdout.split("\0").filter((file) => file !== ""))]);
      },
    );
  });
}

async function walkFiles(root: string, signal?: AbortSignal): Promise<string[]> {
  const files: string[] = [];
  const folders = [""];
  while (folders.length > 0 && files.length < MAX_LISTED_FILES) {
    signal?.throwIfAborted();
    const folder = folders.shift()!;
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(path.join(root, folder), { withFileTypes: true });
    } catch {
      continue; // unreadable: left out
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      const relative = folder === "" ? entry.name : `${folder}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!isProtectedName(entry.name) && !SKIPPED_FOLDERS.has(entry.name)) folders.push(relative);
      } else if (entry.isFile()) files.push(relative);
    }
  }
  return files;
}

/** A workspace's file listing, read again once it is {@link LISTING_TTL_MS} old; one listing runs at a time. */
export class WorkspaceFileList {
  private listing: { at: number; files: Promise<string[]> } | null = null;

  constructor(private readonly root: string) {}

  files(): Promise<string[]> {
    const now = performance.now();
    if (!this.listing || now - this.listing.at > LISTING_TTL_MS) {
      const files = listWorkspaceFiles(this.root);
      this.listing = { at: now, files };
      // A failed listing is not kept.
      files.catch(() => {
        if (this.listing?.files === files) this.listing = null;
      });
    }
    return this.listing.files;
  }
}
