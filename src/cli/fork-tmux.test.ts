import { execFileSync } from "node:child_process";
import { mkdtemp, readdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-fork-test-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

const type = (text: string) => {
  tmux("send-keys", "-t", term.name, "-l", text);
  tmux("send-keys", "-t", term.name, "Enter");
};

test("the real spark binary in tmux: /fork 2 switches to a new session holding the first two turns", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-fork-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const command = `cd ${repo} && SPARK_SESSIONS_DIR=${sessions} "${process.execPath}" "${sparkBin}"`;
  const engine = Object.entries(testEngineEnv()).flatMap(([name, value]) => ["-e", `${name}=${value}`]);
  tmux("new-session", "-d", "-s", term.name, "-x", "120", "-y", "40", "-e", "CI=false", ...engine, command);
  await waitForScreen(/\/help/);
  for (const word of ["alpha", "bravo", "charlie"]) {
    type(word);
    await waitForScreen(new RegExp(`You said: ${word}`));
  }

  type("/fork list");
  await waitForScreen(
    /Turns \(fork one with \/fork N\):[\s\S]*1 {2}alpha[\s\S]*2 {2}bravo[\s\S]*3 {2}charlie/,
  );
  type("/fork 9");
  await waitForScreen(/No turn 9; the turns are/);

  type("/fork 2");
  const forked = await waitForScreen(/Forked from turn 2: Fork of /);
  expect(forked).toContain("You said: bravo");
  expect(forked).not.toContain("You said: charlie");
  type("delta");
  await waitForScreen(/You said: delta/);
  // The parent's transcript and the fork's own.
  expect((await readdir(sessions)).filter((name) => name.endsWith(".jsonl"))).toHaveLength(2);
}, 90_000);
