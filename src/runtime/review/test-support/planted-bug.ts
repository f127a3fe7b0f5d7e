import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Script } from "../../../engine/scripted/scripted-engine.js";

/** git in `cwd` with a fixed author, for the review tests' repositories. */
export function git(cwd: string, ...args: string[]): string {
  const env = { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@e" };
  return execFileSync("git", args, {
    cwd,
    env: { ...env, GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@e" },
    encoding: "utf8",
  });
}

/** A sum over an array, as committed. */
export const SUM_ORIGINAL =
  "export function sum(xs: number[]): number {\n  let total = 0;\n  for (let i = 0; i < xs.length; i++) total += xs[i];\n  return total;\n}\n";

/** The same with an off-by-one in the loop bound (line 3): the bug a review should find. */
export const SUM_PLANTED = SUM_ORIGINAL.replace("i < xs.length", "i <= xs.length");

/**
 * Makes `dir` a repository (on branch `main`) with `file` committed as {@link SUM_ORIGINAL}, then
 * plants the off-by-one in the working tree, uncommitted.
 */
export async function plantBug(dir: string, file: string): Promise<void> {
  git(dir, "init", "-q", "-b", "main");
  await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
  await writeFile(path.join(dir, file), SUM_ORIGINAL);
  git(dir, "add", ".");
  git(dir, "commit", "-q", "-m", "sum");
  await writeFile(path.join(dir, file), SUM_PLANTED);
}

/** What a review of the planted bug in `file` reports, as the model answers it. */
export function plantedBugFinding(file: string) {
  return {
    file,
    start_line: 3,
    end_line: 3,
    severity: "error",
    title: "Off-by-one in the loop bound",
    explanation: "i <= xs.length reads past the end.",
  };
}

/** A scripted model that answers a review (asked under the findings schema) with `findings`, and anything else with "ok". */
export function reviewScript(findings: readonly object[]): Script {
  return (request) => (request.format ? { text: JSON.stringify({ findings }) } : { text: "ok" });
}
