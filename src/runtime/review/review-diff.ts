import { execFile } from "node:child_process";
import type { ReviewTarget } from "../../protocol/agent.js";
import { SparkError } from "../../protocol/errors.js";
import { type DiffFile, parseUnifiedDiff } from "./diff-hunks.js";

/** What a review looks at: the working tree's changes, a branch's, or one commit's. */
export type { ReviewTarget };

export interface ReviewDiff {
  /** The repository's top level: finding paths are relative to it. */
  root: string;
  target: ReviewTarget;
  /** The unified diff the model reads (cut at {@link ReviewDiffOptions.maxBytes}). */
  text: string;
  /** The files the diff changes (deleted ones left out) and their new-side hunk ranges. */
  files: DiffFile[];
  /** Whether the diff was longer than the bound and cut (its last file may be partial). */
  truncated: boolean;
}

export interface ReviewDiffOptions {
  /** UTF-8 bytes of diff kept for the model. Default: 256 KiB. */
  maxBytes?: number;
}

/** How the target is said in reports ("uncommitted changes", "main...HEAD", "commit abc123"). */
export function describeTarget(target: ReviewTarget): string {
  if (target.kind === "uncommitted") return "uncommitted changes";
  if (target.kind === "base") return `${target.base}...HEAD`;
  return `commit ${target.sha}`;
}

const DEFAULT_MAX_BYTES = 256 * 1024;
/** Git's own output is read up to this much more than the bound, then refused. */
const GIT_BUFFER = 64 * 1024 * 1024;
/** The empty tree: what a repository without commits (or a root commit) is compared with. */
const EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/** The same diff whatever the person's git config says (prefixes, colour, external tools). */
const DIFF_FLAGS = ["--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/", "--dst-prefix=b/"];
/** Untracked files listed in an uncommitted review, at most. */
const MAX_UNTRACKED = 200;

/**
 * The diff of `target` in the repository around `cwd`, by running git (never through a shell).
 * Git is told to run nothing of the repository's own (no external diff, no textconv, no fsmonitor),
 * since a review may run in a repository just cloned. Throws a SparkError for a directory outside
 * a repository and for a base or commit git does not know.
 */
export async function collectDiff(
  cwd: string,
  target: ReviewTarget,
  options: ReviewDiffOptions = {},
): Promise<ReviewDiff> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const root = await repositoryRoot(cwd);
  const text = await diffText(root, target, maxBytes);
  const cut = cutAt(text, maxBytes);
  return { root, target, text: cut, files: parseUnifiedDiff(cut), truncated: cut.length < text.length };
}

/** `diff` cut to at most `maxBytes` of diff text (a model's context holds only so much). */
export function fitDiff(diff: ReviewDiff, maxBytes: number): ReviewDiff {
  const text = cutAt(diff.text, maxBytes);
  if (text.length === diff.text.length) return diff;
  return { ...diff, text, files: parseUnifiedDiff(text), truncated: true };
}

/** The share of the model's context the diff may take (the rest: instructions, files read, the answer). */
const DIFF_SHARE = 0.4;
/** UTF-8 bytes per token assumed when sizing the diff for a context (code is about 3). */
const BYTES_PER_TOKEN = 3;

/** `diff` cut to what a model with `contextBudget` tokens of context can review. */
export function fitDiffToContext(diff: ReviewDiff, contextBudget: number): ReviewDiff {
  return fitDiff(diff, Math.floor(contextBudget * DIFF_SHARE * BYTES_PER_TOKEN));
}

async function repositoryRoot(cwd: string): Promise<string> {
  try {
    return (await git(cwd, ["rev-parse", "--show-toplevel"])).trim();
  } catch (error) {
    throw new SparkError(
      "invalid_request",
      `${cwd} is not in a git repository: spark review reviews a git diff (${firstLine(error)}).`,
    );
  }
}

async function diffText(root: string, target: ReviewTarget, maxBytes: number): Promise<string> {
  const diff = ["diff", ...DIFF_FLAGS, "--unified=3", "--no-renames"];
  if (target.kind === "base") {
    const base = await commitOf(root, target.base, "--base");
    return git(root, [...diff, `${base}...HEAD`, "--"]);
  }
  if (target.kind === "commit") {
    const sha = await commitOf(root, target.sha, "--commit");
    const parent = await git(root, ["rev-parse", "--verify", "--quiet", `${sha}^1`]).catch(() => EMPTY_TREE);
    return git(root, [...diff, parent.trim(), sha, "--"]);
  }
  const head = await git(root, ["rev-parse", "--verify", "--quiet", "HEAD"]).catch(() => EMPTY_TREE);
  const tracked = await git(root, [...diff, head.trim(), "--"]);
  return tracked + (await untrackedDiff(root, maxBytes - tracked.length));
}

/** New files not yet added: `git diff HEAD` leaves them out, but they are part of the change. */
async function untrackedDiff(root: string, room: number): Promise<string> {
  const listed = await git(root, ["ls-files", "--others", "--exclude-standard", "-z"]);
  const files = listed.split("\0").filter(Boolean).slice(0, MAX_UNTRACKED);
  let text = "";
  for (const file of files) {
    // Past the bound the diff is cut anyway: the rest is not read.
    if (text.length > room) break;
    // --no-index exits 1 when the files differ, which they always do here.
    text += await git(root, ["diff", ...DIFF_FLAGS, "--no-index", "--", "/dev/null", file], {
      okCodes: [0, 1],
    });
  }
  return text;
}

/** The commit `ref` names; a ref git does not know (or one that reads as an option) is refused. */
async function commitOf(root: string, ref: string, flag: string): Promise<string> {
  if (ref.startsWith("-") || ref.length === 0 || ref.length > 256)
    throw new SparkError("invalid_request", `${flag} '${ref}' is not a branch, tag or commit.`);
  try {
    return (
      await git(root, ["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`])
    ).trim();
  } catch {
    throw new SparkError(
      "invalid_request",
      `${flag} '${ref}' is not a branch, tag or commit of this repository${flag === "--base" ? " (in CI, check out with fetch-depth: 0 so the base branch is there)" : ""}.`,
    );
  }
}

function git(cwd: string, args: string[], options: { okCodes?: number[] } = {}): Promise<string> {
  const okCodes = options.okCodes ?? [0];
  const full = ["-c", "core.fsmonitor=false", "-c", "core.quotepath=off", ...args];
  return new Promise((resolve, reject) => {
    execFile(
      "git",
      full,
      {
        cwd,
        maxBuffer: GIT_BUFFER,
        encoding: "utf8",
        env: {
          ...process.env,
          GIT_PAGER: "cat",
          GIT_EXTERNAL_DIFF: "",
          GIT_TERMINAL_PROMPT: "0",
          LC_ALL: "C",
        },
      },
      (error, stdout, stderr) => {
        const code = error && typeof error.code === "number" ? error.code : error ? -1 : 0;
        if (!okCodes.includes(code)) {
          const message = stderr.trim() || (error?.message ?? `git exited ${code}`);
          reject(new Error(message));
          return;
        }
        resolve(stdout);
      },
    );
  });
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? "";
}

/** `text` cut to at most `maxBytes` UTF-8 bytes, at a line end where there is one. */
function cutAt(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const cut = Buffer.from(text, "utf8")
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  const lineEnd = cut.lastIndexOf("\n");
  return lineEnd > 0 ? cut.slice(0, lineEnd + 1) : cut;
}
