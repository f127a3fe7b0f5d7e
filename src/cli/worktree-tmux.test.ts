import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { runSpark, sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-worktree-${process.pid}`);

afterEach(() => {
  term.kill();
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" });

test("spark --worktree NAME in a terminal resumes the worktree's newest session, and works there", async () => {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-wtt-repo-")));
  git(repo, "init", "-q", "-b", "main");
  await writeFile(path.join(repo, "a.txt"), "one\n");
  git(repo, "add", ".");
  git(repo, "commit", "-qm", "init");
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-wtt-home-"));
  const env = { SPARK_HOME: home, ...testEngineEnv() };
  expect((await runSpark(["exec", "--worktree", "feat", "first words"], repo, env)).code).toBe(0);

  const vars = Object.entries({ ...env, CI: "false" }).flatMap(([name, value]) => ["-e", `${name}=${value}`]);
  const command = `cd ${repo} && "${process.execPath}" "${sparkBin}" --worktree feat`;
  term.tmux("new-session", "-d", "-s", term.name, "-x", "140", "-y", "40", ...vars, command);
  await term.waitForScreen(/resuming session/);
  // The saved conversation is back, and the next message goes on from it.
  await term.waitForScreen(/You said: first words/);
  await term.waitForScreen(/Ask Spark/);
  term.tmux("send-keys", "-t", term.name, "-l", "second words");
  term.tmux("send-keys", "-t", term.name, "Enter");
  await term.waitForScreen(/You said: second words/);

  const list = await runSpark(["worktree", "list"], repo, env);
  expect(list.stdout).toMatch(/^feat\s+spark\/feat\s+clean\s+1\s+/m);
  // The session's transcript names the worktree as its folder.
  const tree = list.stdout.trim().split(/\s+/).at(-1)!;
  const sessions = path.join(home, "sessions");
  const lines = execFileSync("ls", [sessions], { encoding: "utf8" }).trim().split("\n");
  expect(lines).toHaveLength(1);
  const transcript = await readFile(path.join(sessions, lines[0]!), "utf8");
  expect(transcript).toContain(`"cwd":"${tree}"`);
  expect(transcript).toContain('"worktree":{"name":"feat","branch":"spark/feat"}');
});
