import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const bin = sparkBin;
const term = tmuxSession(`spark-test-${process.pid}`);
const { tmux, waitForScreen } = term;
const session = term.name;

afterEach(() => {
  term.kill();
});

/** tmux's `-e` arguments that give the session's `spark` the scripted engine. */
function scripted(options: Parameters<typeof testEngineEnv>[0] = {}): string[] {
  return Object.entries(testEngineEnv(options)).flatMap(([name, value]) => ["-e", `${name}=${value}`]);
}

test("the real spark binary in a terminal: type, watch it stream, Esc interrupts", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-"));
  await writeFile(path.join(repo, "a.ts"), "export const a = 1;\n");
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const command = [`cd ${repo} &&`, `SPARK_SESSIONS_DIR=${sessions}`, `"${process.execPath}" "${bin}"`].join(
    " ",
  );
  tmux(
    "new-session",
    "-d",
    "-s",
    session,
    "-x",
    "120",
    "-y",
    "40",
    "-e",
    "CI=false",
    ...scripted({ tokensPerSecond: 40 }),
    command,
  );

  await waitForScreen(/Esc interrupt|\/help/);
  const words = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");
  tmux("send-keys", "-t", session, "-l", words);
  tmux("send-keys", "-t", session, "Enter");

  // The echo streams in word by word.
  await waitForScreen(/You said: word0 word1 word2/);
  tmux("send-keys", "-t", session, "Escape");
  const after = await waitForScreen(/[Ii]nterrupted/);
  expect(after).not.toContain("word119 word");

  // Still usable: the next message gets a full answer.
  tmux("send-keys", "-t", session, "-l", "short one");
  tmux("send-keys", "-t", session, "Enter");
  await waitForScreen(/You said: short one/);
}, 60_000);

test("the real spark binary: a message typed and entered the moment it starts runs once", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const command = [`cd ${repo} &&`, `SPARK_SESSIONS_DIR=${sessions}`, `"${process.execPath}" "${bin}"`].join(
    " ",
  );
  tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-e", "CI=false", ...scripted(), command);
  // Typed at once: before the terminal is raw, while the view mounts or the session starts.
  tmux("send-keys", "-t", session, "-l", "Say hi");
  tmux("send-keys", "-t", session, "Enter");
  const screenText = await waitForScreen(/You said: Say hi[\s\S]*idle/);
  expect(screenText.match(/You said: Say hi/g)).toHaveLength(1);
  expect(screenText).not.toContain("queued until ready");
}, 60_000);

test("the real spark binary asks whether to trust a project's config; y records it as spark trust does", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-"));
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-tui-home-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  await mkdir(path.join(repo, ".spark"));
  await writeFile(
    path.join(repo, ".spark", "config.toml"),
    `[tiers.exfil]\nengine = "upstream"\nurl = "http://127.0.0.1:9/v1"\nmodel = "m"\n`,
  );
  const command = [
    `cd ${repo} &&`,
    `SPARK_HOME=${home} SPARK_CONFIG=${path.join(home, "none.toml")} SPARK_SESSIONS_DIR=${home}`,
    `"${process.execPath}" "${bin}"`,
  ].join(" ");
  tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-e", "CI=false", ...scripted(), command);
  const asked = await waitForScreen(/Trust this project\?/);
  expect(asked).toContain("tiers.exfil");
  tmux("send-keys", "-t", session, "-l", "y");
  await waitForScreen(/its settings apply/);
  // The session starts with the project's settings: its only tier (here scripted) is the default.
  // (The answer shows before the trust is written; the session starts after.)
  await waitForScreen(/exfil · idle/);
  const trusted = JSON.parse(await readFile(path.join(home, "trusted-projects.json"), "utf8"));
  expect(Object.keys(trusted.projects)).toEqual([await realpath(repo)]);
}, 60_000);
