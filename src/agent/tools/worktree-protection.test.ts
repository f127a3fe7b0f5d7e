import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { EditJournal } from "../edit-journal.js";
import { CommandSandbox } from "../sandbox/command-sandbox.js";
import { linkedGitDir } from "../sandbox/linked-git-dir.js";
import { Workspace } from "../workspace.js";
import { applyPatchTool } from "./apply-patch.js";
import { readFileTool } from "./read-file.js";
import { shellTool } from "./shell.js";
import { runTool, type ToolContext } from "./tool.js";

// A session in a linked git worktree: the repository lives under /tmp (hidden by the sandbox's
// private /tmp unless bound), the worktree elsewhere under /tmp. Commands run under the real bwrap.

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" });
const patch = (...lines: string[]) => ["*** Begin Patch", ...lines, "*** End Patch"].join("\n");

async function linkedWorktree(): Promise<{
  repo: string;
  tree: string;
  gitDir: string;
  context: ToolContext;
}> {
  const repo = await realpath(await mkdtemp(join(tmpdir(), "spark-wtp-repo-")));
  git(repo, "init", "-q", "-b", "main");
  await writeFile(join(repo, "a.txt"), "one\n");
  git(repo, "add", ".");
  git(repo, "commit", "-qm", "init");
  const parent = await realpath(await mkdtemp(join(tmpdir(), "spark-wtp-trees-")));
  const tree = join(parent, "feature");
  git(repo, "worktree", "add", "-q", "-b", "spark/feature", tree);
  const context: ToolContext = {
    workspace: new Workspace(tree),
    journal: new EditJournal(),
    signal: new AbortController().signal,
    sandbox: new CommandSandbox(),
    approve: async () => true,
  };
  return { repo, tree, gitDir: join(repo, ".git"), context };
}

/** Every file under a git directory with its content: to show nothing there changed. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile())
      files[join(entry.parentPath, entry.name)] = await readFile(
        join(entry.parentPath, entry.name),
        "latin1",
      );
  }
  return files;
}

describe("a worktree session's .git", () => {
  test("linkedGitDir finds the repository a worktree's .git file names, and nothing else", async () => {
    const { repo, tree, gitDir } = await linkedWorktree();
    expect(await linkedGitDir(tree)).toBe(gitDir);
    // The main tree's .git is a directory: nothing extra to bind.
    expect(await linkedGitDir(repo)).toBeNull();
    // A .git file pointing at a directory that does not name it back binds nothing.
    const fake = await realpath(await mkdtemp(join(tmpdir(), "spark-wtp-fake-")));
    await mkdir(join(fake, "secret", "worktrees", "x"), { recursive: true });
    await writeFile(join(fake, "secret", "worktrees", "x", "commondir"), "../..\n");
    await writeFile(join(fake, "secret", "worktrees", "x", "gitdir"), "/elsewhere/.git\n");
    await writeFile(join(fake, ".git"), `gitdir: ${join(fake, "secret", "worktrees", "x")}\n`);
    expect(await linkedGitDir(fake)).toBeNull();
    const plain = await realpath(await mkdtemp(join(tmpdir(), "spark-wtp-plain-")));
    expect(await linkedGitDir(plain)).toBeNull();
  });

  test("apply_patch and read_file refuse the worktree's .git file and the repository's .git", async () => {
    const { tree, gitDir, context } = await linkedWorktree();
    const dotGit = await readFile(join(tree, ".git"), "utf8");
    const before = await snapshot(gitDir);
    for (const attempt of [
      patch("*** Update File: .git", "@@", `-${dotGit.trim()}`, "+gitdir: /tmp/evil"),
      patch("*** Delete File: .git"),
      patch("*** Add File: .git/hooks/pre-commit", "+#!/bin/sh"),
    ]) {
      const result = await runTool(applyPatchTool, JSON.stringify({ patch: attempt }), context);
      expect({ attempt, result }).toMatchObject({
        attempt,
        result: { isError: true, errorCode: "path_protected" },
      });
    }
    for (const attempt of [
      patch(`*** Add File: ../../${gitDir.slice(1)}/hooks/pre-commit`, "+#!/bin/sh"),
      patch(`*** Add File: ${join(gitDir, "hooks", "post-checkout")}`, "+#!/bin/sh"),
    ]) {
      const result = await runTool(applyPatchTool, JSON.stringify({ patch: attempt }), context);
      expect({ attempt, result }).toMatchObject({
        attempt,
        result: { isError: true, errorCode: "path_outside_workspace" },
      });
    }
    const read = await runTool(readFileTool, JSON.stringify({ path: join(gitDir, "config") }), context);
    expect(read).toMatchObject({ isError: true, errorCode: "path_outside_workspace" });
    expect(await readFile(join(tree, ".git"), "utf8")).toBe(dotGit);
    expect(await snapshot(gitDir)).toEqual(before);
  });

  test("in the sandbox git reads the repository; the .git file and the repository stay read-only", async () => {
    const { tree, gitDir, context } = await linkedWorktree();
    const dotGit = await readFile(join(tree, ".git"), "utf8");
    const before = await snapshot(gitDir);
    const run = (command: string) => runTool(shellTool, JSON.stringify({ command }), context);

    const reads = await run(
      "git rev-parse --abbrev-ref HEAD && git log --oneline | wc -l && echo two > a.txt && git diff --stat",
    );
    expect(reads.isError).toBe(false);
    expect(reads.output).toContain("spark/feature");
    expect(reads.output).toContain("1 file changed");

    const writes = await run(
      `echo 'gitdir: /tmp/evil' > .git; echo x > ${gitDir}/hooks/post-checkout; git add a.txt; git commit -qm sneaky; echo done`,
    );
    expect(writes.output).toContain("done");
    expect(writes.output).toMatch(/Read-only file system|Permission denied/);
    expect(await readFile(join(tree, ".git"), "utf8")).toBe(dotGit);
    expect(await snapshot(gitDir)).toEqual(before);
    // The worktree's own files were writable.
    expect(await readFile(join(tree, "a.txt"), "utf8")).toBe("two\n");
  });
});
