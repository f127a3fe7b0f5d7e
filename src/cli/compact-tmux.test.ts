import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { shortTokens } from "../client-core/context-meter.js";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-compact-test-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

const LONG = Array.from({ length: 400 }, (_, i) => `w${i}`).join(" ");

test("the real spark binary in tmux: the status line shows the context meter, and /compact says what it freed", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-compact-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const script = path.join(repo, ".script.json");
  await writeFile(script, JSON.stringify([{ match: "long", text: LONG }, { text: "Noted." }]));
  const command = `cd ${repo} && SPARK_SESSIONS_DIR=${sessions} "${process.execPath}" "${sparkBin}"`;
  const engine = Object.entries(testEngineEnv({ script })).flatMap(([name, value]) => [
    "-e",
    `${name}=${value}`,
  ]);
  tmux("new-session", "-d", "-s", term.name, "-x", "140", "-y", "40", "-e", "CI=false", ...engine, command);
  await waitForScreen(/\/help/);

  const send = (text: string) => {
    tmux("send-keys", "-t", term.name, "-l", text);
    tmux("send-keys", "-t", term.name, "Enter");
  };
  send("first: answer briefly");
  // The scripted engine's window is 32768 tokens; the meter reads `ctx USED/32.8K N%`.
  const first = await waitForScreen(/ctx (\d+)\/32\.8K \d+%/);
  const before = Number(/ctx (\d+)\/32\.8K/.exec(first)![1]);
  send("a long answer please");
  await waitForScreen(/w399/);
  send("short");
  await waitForScreen(/ctx \d+(\.\d)?K?\/32\.8K \d+%[\s\S]*/);
  send("/compact the parser");
  const compacted = await waitForScreen(/Context compacted: ([\d,]+) -> ([\d,]+) tokens\./);
  const [, from, to] = /Context compacted: ([\d,]+) -> ([\d,]+) tokens\./.exec(compacted)!;
  const tokens = (text: string) => Number(text.replaceAll(",", ""));
  expect(tokens(from!)).toBeGreaterThan(tokens(to!));
  expect(tokens(from!)).toBeGreaterThan(before);
  // The meter follows: it now shows the compacted size.
  await waitForScreen(new RegExp(`ctx ${shortTokens(tokens(to!))}/32\\.8K`));
}, 60_000);
