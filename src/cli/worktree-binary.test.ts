import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeEach, describe, expect, test } from "vitest";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

// The real binary (run `npx tsc -p tsconfig.build.json` first), on the scripted engine.

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" });

const PATCH = JSON.stringify({
  patch: ["*** Begin Patch", "*** Update File: a.txt", "@@", "-one", "+edited", "*** End Patch"].join("\n"),
});

let repo: string;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-wtb-repo-")));
  git(repo, "init", "-q", "-b", "main");
  await writeFile(path.join(repo, "a.txt"), "one\n");
  git(repo, "add", ".");
  git(repo, "commit", "-qm", "init");
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-wtb-home-"));
  const script = path.join(home, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      { match: "edit", toolCalls: [{ name: "apply_patch", arguments: PATCH }] },
      { text: "Edited." },
    ]),
  );
  env = { SPARK_HOME: home, ...testEngineEnv({ script }) };
});

/** `spark worktree list`'s rows, as cells. */
function rows(stdout: string): string[][] {
  return stdout
    .trim()
    .split("\n")
    .slice(1)
    .map((line) => line.split(/\s{2,}/));
}

describe("spark --worktree and spark worktree (the real binary)", () => {
  test("exec --worktree edits in a new worktree on its own branch; list shows it; the main tree is untouched", async () => {
    const run = await runSpark(["exec", "--worktree", "fix-a", "edit a.txt"], repo, env);
    expect(run.stderr).toMatch(/spark: new worktree fix-a \(branch spark\/fix-a\) at .*fix-a/);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe("Edited.");
    expect(await readFile(path.join(repo, "a.txt"), "utf8")).toBe("one\n");

    const list = await runSpark(["worktree", "list"], repo, env);
    expect(list.code).toBe(0);
    const [row] = rows(list.stdout);
    expect(row?.slice(0, 4)).toEqual(["fix-a", "spark/fix-a", "dirty", "1"]);
    const tree = row![4]!;
    expect(await readFile(path.join(tree, "a.txt"), "utf8")).toBe("edited\n");
    expect(git(tree, "rev-parse", "--abbrev-ref", "HEAD").trim()).toBe("spark/fix-a");

    // Again: the same worktree (exec starts a new session there).
    const again = await runSpark(["exec", "--worktree", "fix-a", "hello"], repo, env);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/spark: worktree fix-a \(branch spark\/fix-a\)/);
    expect(rows((await runSpark(["worktree", "list"], repo, env)).stdout)[0]?.[3]).toBe("2");

    // Dirty: refused, with the file named; --force removes it; the branch stays.
    const refused = await runSpark(["worktree", "remove", "fix-a"], repo, env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^spark: Worktree 'fix-a' has uncommitted changes \(a\.txt\).*--force/m);
    expect(await readFile(path.join(tree, "a.txt"), "utf8")).toBe("edited\n");
    const removed = await runSpark(["worktree", "remove", "fix-a", "--force"], repo, env);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain("branch spark/fix-a is kept");
    expect((await runSpark(["worktree", "list"], repo, env)).stdout).toMatch(/^No Spark worktrees of /);
    expect(git(repo, "branch", "--list", "spark/fix-a").trim()).toBe("spark/fix-a");
  });

  test("a clean worktree is removed without --force; an unknown one is a clear error", async () => {
    expect((await runSpark(["exec", "--worktree", "clean", "hello"], repo, env)).code).toBe(0);
    const removed = await runSpark(["worktree", "remove", "clean"], repo, env);
    expect(removed.code).toBe(0);
    const unknown = await runSpark(["worktree", "remove", "clean"], repo, env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^spark: No worktree 'clean' in /m);
  });

  test("without a name, --worktree makes one; the prompt goes before it", async () => {
    const run = await runSpark(["edit a.txt", "--worktree"], repo, env);
    expect(run.code).toBe(0);
    const name = /new worktree (wt-[0-9a-f]{6}) /.exec(run.stderr)?.[1];
    expect(name).toBeDefined();
    expect(rows((await runSpark(["worktree", "list"], repo, env)).stdout)[0]?.[0]).toBe(name);
  });

  test("bad names and places are refused with a clear message, and nothing is made", async () => {
    const bad = await runSpark(["exec", "--worktree", "../escape", "hi"], repo, env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("a worktree name is letters, digits");
    const outside = await mkdtemp(path.join(os.tmpdir(), "spark-wtb-plain-"));
    for (const args of [
      ["exec", "--worktree", "x", "hi"],
      ["worktree", "list"],
    ]) {
      const run = await runSpark(args, outside, env);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^spark: Worktree sessions need a git repository, and .* is not in one/m);
    }
    expect(git(repo, "worktree", "list").trim().split("\n")).toHaveLength(1);
  });

  test("--help says how", async () => {
    const root = await runSpark(["--help"], repo, env);
    expect(root.stdout).toContain("--worktree [name]");
    expect(root.stdout).toMatch(/worktree\s+list and remove the git worktrees/);
    const help = await runSpark(["worktree", "--help"], repo, env);
    expect(help.stdout).toContain("spark worktree remove fix-parser --force");
    expect(help.stdout).toContain(path.join(env.SPARK_HOME!, "worktrees"));
  });
});
