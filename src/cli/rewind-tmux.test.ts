import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-rewind-test-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

const patch = (lines: string[]) =>
  JSON.stringify({ patch: ["*** Begin Patch", ...lines, "*** End Patch"].join("\n") });

test("the real spark binary in tmux: /rewind picks a turn, takes back code and conversation, and the message returns to the prompt", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-rewind-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  await writeFile(path.join(repo, "a.txt"), "a\n");
  const script = path.join(sessions, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      {
        match: "make alpha",
        toolCalls: [
          { name: "apply_patch", arguments: patch(["*** Update File: a.txt", "@@", "-a", "+alpha"]) },
        ],
      },
      {
        match: "make beta",
        toolCalls: [
          { name: "apply_patch", arguments: patch(["*** Update File: a.txt", "@@", "-alpha", "+beta"]) },
        ],
      },
      { text: "Done." },
    ]),
  );
  const command = `cd ${repo} && SPARK_SESSIONS_DIR=${sessions} "${process.execPath}" "${sparkBin}"`;
  const engine = Object.entries(testEngineEnv({ script })).flatMap(([name, value]) => [
    "-e",
    `${name}=${value}`,
  ]);
  tmux("new-session", "-d", "-s", term.name, "-x", "120", "-y", "40", "-e", "CI=false", ...engine, command);
  await waitForScreen(/\/help/);
  const send = async (text: string, done: RegExp) => {
    tmux("send-keys", "-t", term.name, "-l", text);
    tmux("send-keys", "-t", term.name, "Enter");
    await waitForScreen(done);
  };
  await send("make alpha", /Done\./);
  await send("make beta", /Done\.[\s\S]*Done\./);
  expect(await readFile(path.join(repo, "a.txt"), "utf8")).toBe("beta\n");

  await send("/rewind", /Rewind to before which message\?/);
  const picker = term.screen();
  // Newest first, each with what it changed.
  expect(picker.indexOf("make beta  changed a.txt")).toBeLessThan(
    picker.indexOf("make alpha  changed a.txt"),
  );
  tmux("send-keys", "-t", term.name, "Down");
  await waitForScreen(/> make alpha/);
  tmux("send-keys", "-t", term.name, "Enter");
  await waitForScreen(/take back what\?/);
  tmux("send-keys", "-t", term.name, "Enter");
  const screen = await waitForScreen(
    /Rewound the conversation and code \(restored a\.txt\) to before "make alpha"\./,
  );
  expect(await readFile(path.join(repo, "a.txt"), "utf8")).toBe("a\n");
  // The message is back in the prompt box, to edit and send again.
  expect(screen.slice(screen.lastIndexOf("Rewound the conversation"))).toMatch(/>\s+make alpha/);
}, 60_000);
