import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { collectDiff, fitDiff } from "./review-diff.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-review-diff-")));
  dirs.push(dir);
  return dir;
}

const gitEnv = {
  ...process.env,
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.com",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.com",
  GIT_CONFIG_NOSYSTEM: "1",
};

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, env: gitEnv, encoding: "utf8" });
}

/** A repository whose first commit has src/math.ts (lines one..five) on branch main. */
async function repo(): Promise<string> {
  const dir = await tempDir();
  git(dir, "init", "-q", "-b", "main");
  await mkdir(path.join(dir, "src"));
  await writeFile(path.join(dir, "src/math.ts"), "one\ntwo\nthree\nfour\nfive\n");
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "first");
  return dir;
}

describe("the diff a review reads", () => {
  it("uncommitted: staged and unstaged changes against HEAD, and new files not yet added, with paths from the repository root", async () => {
    const dir = await repo();
    await writeFile(path.join(dir, "src/math.ts"), "one\ntwo\nTHREE\nfour\nfive\n");
    await writeFile(path.join(dir, "src/new.ts"), "a\nb\n");
    await mkdir(path.join(dir, "docs"));
    await writeFile(path.join(dir, "docs/staged.md"), "s\n");
    git(dir, "add", "docs/staged.md");
    const diff = await collectDiff(path.join(dir, "src"), { kind: "uncommitted" });
    expect(diff.root).toBe(dir);
    expect(diff.truncated).toBe(false);
    expect(diff.files).toEqual([
      { path: "docs/staged.md", ranges: [{ start: 1, end: 1 }] },
      { path: "src/math.ts", ranges: [{ start: 1, end: 5 }] },
      { path: "src/new.ts", ranges: [{ start: 1, end: 2 }] },
    ]);
    expect(diff.text).toContain("+THREE");
  });

  it("a repository without commits: everything in it is the change", async () => {
    const dir = await tempDir();
    git(dir, "init", "-q");
    await writeFile(path.join(dir, "a.ts"), "x\n");
    const diff = await collectDiff(dir, { kind: "uncommitted" });
    expect(diff.files).toEqual([{ path: "a.ts", ranges: [{ start: 1, end: 1 }] }]);
  });

  it("nothing changed: no files (the command then says there is nothing to review)", async () => {
    const diff = await collectDiff(await repo(), { kind: "uncommitted" });
    expect(diff.files).toEqual([]);
    expect(diff.text).toBe("");
  });

  it("--base: only what HEAD changed since it left the base, not what the base did since", async () => {
    const dir = await repo();
    git(dir, "checkout", "-q", "-b", "feature");
    await writeFile(path.join(dir, "src/feature.ts"), "f\n");
    git(dir, "add", ".");
    git(dir, "commit", "-q", "-m", "feature");
    git(dir, "checkout", "-q", "main");
    await writeFile(path.join(dir, "src/main-only.ts"), "m\n");
    git(dir, "add", ".");
    git(dir, "commit", "-q", "-m", "main moves on");
    git(dir, "checkout", "-q", "feature");
    const diff = await collectDiff(dir, { kind: "base", base: "main" });
    expect(diff.files.map((f) => f.path)).toEqual(["src/feature.ts"]);
  });

  it("--base that names nothing, or reads as an option, is refused with what to check", async () => {
    const dir = await repo();
    await expect(collectDiff(dir, { kind: "base", base: "origin/nope" })).rejects.toThrow(
      /--base 'origin\/nope' is not a branch, tag or commit of this repository \(in CI, check out with fetch-depth: 0/,
    );
    await expect(collectDiff(dir, { kind: "base", base: "--output=/tmp/x" })).rejects.toThrow(
      /--base '--output=\/tmp\/x' is not a branch/,
    );
  });

  it("--commit: that commit's changes, a root commit's included", async () => {
    const dir = await repo();
    await writeFile(path.join(dir, "src/math.ts"), "one\ntwo\nthree\nfour\nfive\nsix\n");
    git(dir, "commit", "-q", "-am", "six");
    const head = await collectDiff(dir, { kind: "commit", sha: "HEAD" });
    expect(head.files).toEqual([{ path: "src/math.ts", ranges: [{ start: 3, end: 6 }] }]);
    const root = await collectDiff(dir, { kind: "commit", sha: "HEAD~1" });
    expect(root.files).toEqual([{ path: "src/math.ts", ranges: [{ start: 1, end: 5 }] }]);
    await expect(collectDiff(dir, { kind: "commit", sha: "0123abc" })).rejects.toThrow(
      /--commit '0123abc' is not a branch, tag or commit/,
    );
  });

  it("outside a git repository: a clear error", async () => {
    const dir = await tempDir();
    await expect(collectDiff(dir, { kind: "uncommitted" })).rejects.toThrow(/is not in a git repository/);
  });

  it("runs nothing the repository's git config names (external diff, textconv, fsmonitor)", async () => {
    const dir = await repo();
    const marker = path.join(dir, "..", `${path.basename(dir)}-ran`);
    const script = path.join(dir, "hook.sh");
    await writeFile(script, `#!/bin/sh\ntouch '${marker}'\n`);
    await chmod(script, 0o755);
    git(dir, "config", "diff.external", script);
    git(dir, "config", "core.fsmonitor", script);
    git(dir, "config", "diff.evil.textconv", script);
    await writeFile(path.join(dir, ".gitattributes"), "*.ts diff=evil\n");
    await writeFile(path.join(dir, "src/math.ts"), "changed\n");
    const diff = await collectDiff(dir, { kind: "uncommitted" });
    expect(diff.text).toContain("+changed");
    expect(existsSync(marker)).toBe(false);
  });

  it("a diff longer than the model may read is cut at a line end and marked truncated", async () => {
    const dir = await repo();
    await writeFile(path.join(dir, "src/math.ts"), `${"long line of code\n".repeat(200)}`);
    await writeFile(path.join(dir, "src/z-later.ts"), "later\n");
    const diff = await collectDiff(dir, { kind: "uncommitted" });
    const fitted = fitDiff(diff, 1000);
    expect(fitted.truncated).toBe(true);
    expect(Buffer.byteLength(fitted.text)).toBeLessThanOrEqual(1000);
    expect(fitted.text.endsWith("\n")).toBe(true);
    expect(fitted.files.map((f) => f.path)).toEqual(["src/math.ts"]);
    expect(fitDiff(diff, 1_000_000)).toBe(diff);
  });
});
