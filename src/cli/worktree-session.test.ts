import { execFileSync } from "node:child_process";
import { mkdtemp, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { sessionsDir, Transcript } from "../agent/transcript.js";
import type { AgentFlags } from "./agent-flags.js";
import { enterWorktree } from "./worktree-session.js";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" });

test("spark --worktree NAME: new, then resumed at its newest session (the terminal), or a new one (exec)", async () => {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-wts-repo-")));
  git(repo, "init", "-q", "-b", "main");
  await writeFile(path.join(repo, "a.txt"), "one\n");
  git(repo, "add", ".");
  git(repo, "commit", "-qm", "init");
  const env = { SPARK_HOME: await mkdtemp(path.join(os.tmpdir(), "spark-wts-home-")) };
  const said: string[] = [];
  const flags: AgentFlags = { approval: "ask", prewarm: true, attach: true, cd: repo, worktree: "feature" };

  const first = await enterWorktree(flags, { env, say: (line) => said.push(line) });
  const tree = first.flags.cd!;
  expect(first.flags).toMatchObject({ inWorktree: { name: "feature", branch: "spark/feature" } });
  expect(first.flags.worktree).toBeUndefined();
  expect(first.resumeFile).toBeUndefined();
  expect(said.pop()).toMatch(/^spark: new worktree feature \(branch spark\/feature\) at /);

  // Two sessions there (one never used, which is not resumed), one in the main tree.
  const now = Date.now();
  const sessions = sessionsDir(env);
  const save = async (id: string, cwd: string, used: boolean, age: number) => {
    const at = new Date(now - age).toISOString();
    const transcript = await Transcript.create(sessions, {
      id,
      title: id,
      cwd,
      model: "m",
      createdAt: at,
      updatedAt: at,
    });
    if (used)
      transcript.observe({
        type: "item.completed",
        turn_id: "t",
        item: { type: "user_message", id: "u", text: "hi" },
      });
    await transcript.flush();
  };
  await save("thr_old", tree, true, 0);
  await save("thr_main", repo, true, 0);
  await save("thr_unused", tree, false, 0);

  const resumed = await enterWorktree(flags, { env, say: (line) => said.push(line) });
  expect(resumed.flags.cd).toBe(tree);
  expect(resumed.resumeFile).toBe(path.join(sessions, "thr_old.jsonl"));
  expect(said.pop()).toMatch(/^spark: worktree feature .*, resuming session thr_old$/);

  const exec = await enterWorktree(flags, { env, resume: false, say: (line) => said.push(line) });
  expect(exec.resumeFile).toBeUndefined();
  expect(said.pop()).not.toContain("resuming");
});
