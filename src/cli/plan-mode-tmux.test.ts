import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-plan-test-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

test("the real spark binary in tmux: Shift+Tab shows plan mode in the status bar and its turns carry the note", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-plan-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const command = `cd ${repo} && SPARK_SESSIONS_DIR=${sessions} "${process.execPath}" "${sparkBin}"`;
  const engine = Object.entries(testEngineEnv()).flatMap(([name, value]) => ["-e", `${name}=${value}`]);
  tmux("new-session", "-d", "-s", term.name, "-x", "120", "-y", "40", "-e", "CI=false", ...engine, command);
  await waitForScreen(/\/help/);
  expect(term.screen()).not.toContain("plan mode (Shift+Tab)");

  tmux("send-keys", "-t", term.name, "BTab");
  await waitForScreen(/plan mode \(Shift\+Tab\)/);
  tmux("send-keys", "-t", term.name, "-l", "first");
  tmux("send-keys", "-t", term.name, "Enter");
  // The echo engine repeats what the model was sent: the message with the plan-mode note at its end.
  await waitForScreen(/You said: first\s+\[Plan mode is on/);

  tmux("send-keys", "-t", term.name, "BTab");
  tmux("send-keys", "-t", term.name, "-l", "second");
  tmux("send-keys", "-t", term.name, "Enter");
  const screen = await waitForScreen(/You said: second\s/);
  expect(screen).not.toContain("plan mode (Shift+Tab)");
  expect(screen.slice(screen.indexOf("You said: second"))).not.toContain("[Plan mode is on");
}, 60_000);
