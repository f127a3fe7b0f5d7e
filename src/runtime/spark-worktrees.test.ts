import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { worktreeNameSchema } from "../protocol/agent-requests.js";
import { MAX_WORKTREE_NAME, worktreeNameProblem } from "../protocol/worktree-name.js";
import { SparkWorktrees, worktreesDir } from "./spark-worktrees.js";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" });

/** A repository with one commit, and a Spark home of its own for the worktrees. */
async function repository(): Promise<{ repo: string; env: NodeJS.ProcessEnv }> {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-wt-repo-")));
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-wt-home-"));
  git(repo, "init", "-q", "-b", "main");
  await writeFile(path.join(repo, "a.txt"), "one\n");
  git(repo, "add", ".");
  git(repo, "commit", "-qm", "init");
  return { repo, env: { SPARK_HOME: home } };
}

describe("worktree names", () => {
  const valid = ["fix-parser", "a", "v1.2", "A_b-3", "x".repeat(MAX_WORKTREE_NAME)];
  const invalid = [
    "",
    ".",
    "..",
    ".hidden",
    "-x",
    "_x",
    "a/b",
    "../up",
    "a..b",
    "a.",
    "x.lock",
    "fix it",
    "ünï",
    "a\\b",
    "a:b",
    "a~1",
    "a^",
    "x".repeat(MAX_WORKTREE_NAME + 1),
  ];

  test("safe names pass, and each is a branch git accepts as spark/NAME", () => {
    for (const name of valid) {
      expect({ name, problem: worktreeNameProblem(name) }).toEqual({ name, problem: null });
      expect(worktreeNameSchema.safeParse(name).success).toBe(true);
      expect(git(os.tmpdir(), "check-ref-format", "--branch", `spark/${name}`).trim()).toBe(`spark/${name}`);
    }
  });

  test("anything that could leave the folder, hide, or make a bad branch is refused, saying why", () => {
    for (const name of invalid) {
      expect({ name, problem: worktreeNameProblem(name) }).toEqual({ name, problem: expect.any(String) });
      expect(worktreeNameSchema.safeParse(name).success).toBe(false);
    }
  });
});

describe("SparkWorktrees", () => {
  test("outside a git repository: a clear error naming the folder", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-wt-none-"));
    await expect(SparkWorktrees.of(dir)).rejects.toMatchObject({
      code: "invalid_request",
      param: "worktree",
      message: expect.stringMatching(/need a git repository, and .* is not in one/),
    });
  });

  test("a repository without a commit says to commit first", async () => {
    const repo = await mkdtemp(path.join(os.tmpdir(), "spark-wt-empty-"));
    git(repo, "init", "-q");
    const trees = await SparkWorktrees.of(repo, { env: { SPARK_HOME: repo } });
    await expect(trees.open("x")).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringContaining("no commit yet"),
    });
  });

  test("open makes a worktree on its own branch in Spark's folder; again, it is the same one", async () => {
    const { repo, env } = await repository();
    const trees = await SparkWorktrees.of(repo, { env });
    expect(trees.mainRoot).toBe(repo);
    expect(path.dirname(trees.dir)).toBe(await realpath(worktreesDir(env)).catch(() => worktreesDir(env)));
    expect(path.basename(trees.dir)).toMatch(new RegExp(`^${path.basename(repo)}-[0-9a-f]{10}$`));
    const first = await trees.open("feature");
    expect(first.created).toBe(true);
    expect(first.worktree).toMatchObject({ name: "feature", branch: "spark/feature", missing: false });
    expect(first.worktree.path).toBe(path.join(trees.dir, "feature"));
    expect(git(first.worktree.path, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("spark/feature");
    expect(await readFile(path.join(first.worktree.path, "a.txt"), "utf8")).toBe("one\n");
    // Nothing in the main tree: its status stays clean.
    expect(git(repo, "status", "--porcelain")).toBe("");

    const again = await trees.open("feature");
    expect(again).toEqual({ worktree: first.worktree, created: false });
    // From inside the worktree, the repository is the same.
    const inside = await SparkWorktrees.of(first.worktree.path, { env });
    expect(inside.mainRoot).toBe(repo);
    expect((await inside.list()).map((w) => w.name)).toEqual(["feature"]);
    expect(await inside.owns(first.worktree.path)).toMatchObject({ name: "feature" });
    expect(await inside.owns(repo)).toBeNull();
  });

  test("two opens of one name at once give one worktree", async () => {
    const { repo, env } = await repository();
    const trees = await SparkWorktrees.of(repo, { env });
    const [a, b] = await Promise.all([trees.open("same"), trees.open("same")]);
    expect(a.worktree.path).toBe(b.worktree.path);
    expect((await trees.list()).length).toBe(1);
  });

  test("without a name, a new generated one each time", async () => {
    const { repo, env } = await repository();
    const trees = await SparkWorktrees.of(repo, { env });
    const a = await trees.open();
    const b = await trees.open();
    expect(a.worktree.name).not.toBe(b.worktree.name);
    for (const { worktree } of [a, b]) expect(worktreeNameProblem(worktree.name)).toBeNull();
  });

  test("an invalid name is refused before git runs", async () => {
    const { repo, env } = await repository();
    const trees = await SparkWorktrees.of(repo, { env });
    await expect(trees.open("../escape")).rejects.toMatchObject({
      code: "invalid_request",
      param: "worktree.name",
    });
    expect(await trees.list()).toEqual([]);
    expect(existsSync(path.join(trees.dir, "..", "escape"))).toBe(false);
  });

  test("remove refuses a dirty worktree naming its files, removes it with force; the branch stays", async () => {
    const { repo, env } = await repository();
    const trees = await SparkWorktrees.of(repo, { env });
    const { worktree } = await trees.open("dirty");
    await writeFile(path.join(worktree.path, "a.txt"), "two\n");
    await writeFile(path.join(worktree.path, "new.txt"), "new\n");
    expect(await trees.changes(worktree)).toHaveLength(2);

    await expect(trees.remove("dirty")).rejects.toMatchObject({
      code: "invalid_request",
      message: expect.stringMatching(/uncommitted changes \(.*a\.txt.*new\.txt.*\).*--force/),
    });
    expect(existsSync(path.join(worktree.path, "new.txt"))).toBe(true);

    await trees.remove("dirty", { force: true });
    expect(existsSync(worktree.path)).toBe(false);
    expect(await trees.list()).toEqual([]);
    expect(git(repo, "branch", "--list", "spark/dirty").trim()).toBe("spark/dirty");
    await expect(trees.remove("dirty")).rejects.toMatchObject({ code: "not_found" });
  });

  test("a clean worktree is removed; opened again, it checks out its kept branch with its commits", async () => {
    const { repo, env } = await repository();
    const trees = await SparkWorktrees.of(repo, { env });
    const { worktree } = await trees.open("kept");
    await writeFile(path.join(worktree.path, "a.txt"), "committed\n");
    git(worktree.path, "commit", "-qam", "work");
    await trees.remove("kept");
    expect(existsSync(worktree.path)).toBe(false);

    const back = await trees.open("kept");
    expect(back.created).toBe(true);
    expect(await readFile(path.join(back.worktree.path, "a.txt"), "utf8")).toBe("committed\n");
    expect(await readFile(path.join(repo, "a.txt"), "utf8")).toBe("one\n");
  });

  test("a worktree folder deleted by hand is listed missing, and open makes it again", async () => {
    const { repo, env } = await repository();
    const trees = await SparkWorktrees.of(repo, { env });
    const { worktree } = await trees.open("gone");
    await rm(worktree.path, { recursive: true, force: true });
    expect(await trees.list()).toMatchObject([{ name: "gone", missing: true }]);
    const again = await trees.open("gone");
    expect(again.created).toBe(true);
    expect(existsSync(path.join(again.worktree.path, "a.txt"))).toBe(true);
  });
});
