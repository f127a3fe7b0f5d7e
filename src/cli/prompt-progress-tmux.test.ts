import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { testModelPath } from "../engine/test-support/test-model.js";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";

const term = tmuxSession(`spark-prompt-progress-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

// "warming up…" for half a minute said nothing of how long the first start would take.
test("the real spark binary on a model shows the agent prompt's evaluation as it goes, then is ready", {
  timeout: 180_000,
}, async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-prompt-progress-"));
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-prompt-progress-home-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  // A long AGENTS.md: the prompt takes the tiny model long enough to evaluate that the view shows it.
  const rules = Array.from({ length: 100 }, (_, i) => `- Rule ${i}: name each helper for what it does.`);
  await writeFile(path.join(repo, "AGENTS.md"), `# House rules\n\n${rules.join("\n")}\n`);
  const command = [
    `cd ${repo} &&`,
    // Nothing saved yet: the prompt is evaluated, not restored.
    `XDG_CACHE_HOME=${path.join(home, "cache")} XDG_STATE_HOME=${path.join(home, "state")}`,
    `SPARK_SESSIONS_DIR=${path.join(home, "sessions")}`,
    `"${process.execPath}" "${sparkBin}" --model "${await testModelPath()}" --ctx-size 16384`,
  ].join(" ");
  tmux("new-session", "-d", "-s", term.name, "-x", "140", "-y", "40", "-e", "CI=false", command);

  const progress = await waitForScreen(
    /preparing the agent prompt \d+% \([\d,]+\/[\d,]+ tokens\)|could not start/,
    120_000,
  );
  expect(progress).not.toContain("could not start");
  const [, evaluated, total] = /\(([\d,]+)\/([\d,]+) tokens\)/.exec(progress)!;
  const count = (text: string) => Number(text.replaceAll(",", ""));
  expect(count(evaluated!)).toBeLessThanOrEqual(count(total!));
  expect(count(total!)).toBeGreaterThan(5000);
  // Ready: the status line says nothing of the start any more.
  const ready = await waitForScreen(/idle|could not start/, 120_000);
  expect(ready).not.toMatch(/preparing the agent prompt/);
});
