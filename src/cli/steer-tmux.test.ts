import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-steer-test-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

const story = Array.from({ length: 600 }, (_, i) => `story${i}`).join(" ");

test("the real spark binary in tmux: a steer mid-answer shows the interrupted reply above '> steer:' (it was printed below, as the steer's reply), and the steer's @ mention goes with it", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-steer-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-steer-sessions-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  await mkdir(path.join(repo, "src"));
  await writeFile(path.join(repo, "src", "parser.ts"), "export const parse = 'PARSER-BODY';\n");
  const script = path.join(sessions, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      // Answers only when the mentioned file's contents came with the steer.
      { match: "PARSER-BODY", text: "Saw the parser." },
      { match: "tell a story", text: story },
      { text: "Done." },
    ]),
  );
  const command = `cd ${repo} && SPARK_SESSIONS_DIR=${sessions} "${process.execPath}" "${sparkBin}"`;
  const engine = Object.entries(testEngineEnv({ script, tokensPerSecond: 40 })).flatMap(([name, value]) => [
    "-e",
    `${name}=${value}`,
  ]);
  tmux("new-session", "-d", "-s", term.name, "-x", "120", "-y", "40", "-e", "CI=false", ...engine, command);
  await waitForScreen(/\/help/);
  const type = (text: string) => tmux("send-keys", "-t", term.name, "-l", text);
  const key = (name: string) => tmux("send-keys", "-t", term.name, name);

  type("tell a story");
  key("Enter");
  // Mid-answer: the reply has begun and is far from its end.
  await waitForScreen(/story12 /, 30_000);
  type("now read @src/parser.ts please");
  key("Enter");
  const screen = await waitForScreen(/Saw the parser\./, 30_000);

  const lines = screen.split("\n");
  const steerAt = lines.findIndex((line) => line.includes("> steer: now read @src/parser.ts please"));
  const answerAt = lines.findIndex((line) => line.includes("Saw the parser."));
  const storyLines = lines.flatMap((line, i) => (/story\d+/.test(line) ? [i] : []));
  expect(steerAt, screen).toBeGreaterThan(0);
  expect(storyLines.length).toBeGreaterThan(0);
  // Every line of the interrupted reply is above the steer; the steer's answer is below it.
  expect(Math.max(...storyLines), screen).toBeLessThan(steerAt);
  expect(answerAt, screen).toBeGreaterThan(steerAt);
  // The reply was cut short by the steer.
  expect(screen).not.toContain("story599");
}, 90_000);
