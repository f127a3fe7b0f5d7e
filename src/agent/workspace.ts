import { realpathSync } from "node:fs";
import { lstat, readlink, realpath } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError } from "./tools/tool-error.js";

/** Symlink hops followed before a path is treated as a loop (Linux's own limit). */
const MAX_SYMLINK_HOPS = 40;

/**
 * Directory names off limits to every tool, at any depth: git runs hooks and reads config
 * (`core.fsmonitor`, `core.hooksPath`) from every repository's `.git`, nested ones included, and
 * `.spark` holds the project's Spark config.
 */
const PROTECTED_NAMES = new Set([".git", ".spark"]);

/** Characters HFS+ ignores in names, so `.g\u200Cit` opens `.git` there (git's own list). */
const HFS_IGNORED = /[\u200B-\u200F\u202A-\u202E\u206A-\u206F\uFEFF]/g;

/**
 * True when a path segment names a protected directory on some filesystem: case-insensitive ones
 * open `.GIT` as `.git`, Windows drops trailing dots and spaces and knows `.git` as `GIT~1`, HFS+
 * ignores zero-width characters.
 */
export function isProtectedName(name: string): boolean {
  const folded = name
    .replace(HFS_IGNORED, "")
    .replace(/[. ]+$/, "")
    .toLowerCase();
  return PROTECTED_NAMES.has(folded) || folded === "git~1";
}

/**
 * The directory tree the agent may read and change. Every path a tool touches goes through
 * {@link Workspace.resolve}, which is the one place escapes are refused.
 */
export class Workspace {
  /** The root as a real path (symlinks resolved). */
  readonly root: string;
  /** The root as given, so absolute paths written against it are accepted too. */
  private readonly givenRoot: string;

  constructor(root: string) {
    this.givenRoot = resolve(root);
    this.root = realpathSync(this.givenRoot);
  }

  /**
   * The real absolute path of `path` (relative to the root, or absolute inside it). The file need
   * not exist. Throws a ToolError `path_outside_workspace` for anything that leaves the root: `..`
   * segments, absolute paths elsewhere, and symlinks anywhere along the path (the final component
   * included, dangling or not) whose target lies outside. Throws `path_protected` for a path
   * through `.git` or `.spark` (see {@link isProtectedName}), as named or once symlinks are
   * resolved.
   */
  async resolve(path: string): Promise<string> {
    if (path.includes("\0")) throw new ToolError("invalid_arguments", "A path must not contain NUL bytes.");
    const lexical = this.lexical(path);
    if (lexical === null) throw outside(path);
    this.refuseProtected(path, lexical);
    let real: string;
    try {
      real = await realpathLenient(lexical, 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ELOOP") {
        throw new ToolError("failed", `${path}: too many levels of symbolic links.`, { cause: error });
      }
      throw new ToolError("failed", `Cannot resolve ${path}: ${(error as Error).message}`, { cause: error });
    }
    if (!isInside(this.root, real)) throw outside(path);
    this.refuseProtected(path, real);
    return real;
  }

  /** `absolute` relative to the root, with `/` separators; `.` for the root itself. */
  relative(absolute: string): string {
    const rel = relative(this.root, absolute);
    if (rel === "") return ".";
    return sep === "/" ? rel : rel.split(sep).join("/");
  }

  private refuseProtected(path: string, absolute: string): void {
    const segment = relative(this.root, absolute).split(sep).find(isProtectedName);
    if (segment === undefined) return;
    throw new ToolError(
      "path_protected",
      `${path} is inside ${segment}: .git and .spark directories (at any depth) are off limits to ` +
        "every tool, since git and Spark run what they hold. Work with other paths; the person " +
        "changes git metadata and Spark settings.",
    );
  }

  /** The absolute path under the real root, or null when it leaves the root lexically. */
  private lexical(path: string): string | null {
    if (!isAbsolute(path)) {
      const joined = resolve(this.root, path);
      return isInside(this.root, joined) ? joined : null;
    }
    const absolute = resolve(path);
    if (isInside(this.root, absolute)) return absolute;
    if (isInside(this.givenRoot, absolute)) return join(this.root, relative(this.givenRoot, absolute));
    return null;
  }
}

function outside(path: string): ToolError {
  return new ToolError(
    "path_outside_workspace",
    `${path} is outside the workspace. Use a path relative to the workspace root.`,
  );
}

function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * realpath for paths that may not exist yet: the longest existing prefix is resolved and the
 * missing rest appended. A dangling symlink is followed to where a write would land, since writing
 * through it would create its target.
 */
async function realpathLenient(path: string, hops: number): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
  }
  const parent = dirname(path);
  if (parent === path) return path;
  const candidate = join(await realpathLenient(parent, hops), basename(path));
  let isLink = false;
  try {
    isLink = (await lstat(candidate)).isSymbolicLink();
  } catch {
    return candidate;
  }
  if (!isLink) return candidate;
  if (hops >= MAX_SYMLINK_HOPS) throw Object.assign(new Error("symlink loop"), { code: "ELOOP" });
  const target = await readlink(candidate);
  return realpathLenient(resolve(dirname(candidate), target), hops + 1);
}
