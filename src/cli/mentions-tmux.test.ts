import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-mentions-test-${process.pid}`);
const { tmux, waitForScreen } = term;

afterEach(() => {
  term.kill();
});

const patch = (lines: string[]) =>
  JSON.stringify({ patch: ["*** Begin Patch", ...lines, "*** End Patch"].join("\n") });

test("the real spark binary in tmux: @ opens a fuzzy file picker whose file goes with the message, Tab completes a slash command, /diff shows the session's changes", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-tui-mentions-"));
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-tui-sessions-"));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  await mkdir(path.join(repo, "src"));
  await writeFile(path.join(repo, "src", "parser.ts"), "export const parse = 'PARSER-BODY';\n");
  await writeFile(path.join(repo, "src", "printer.ts"), "export const print = 1;\n");
  await writeFile(path.join(repo, "README.md"), "hello\n");
  // Edited by the session (not a .ts file: no language server is waited for after the edit).
  await writeFile(path.join(repo, "NOTES.md"), "print 1\n");
  const script = path.join(sessions, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      // Answers only when the file's contents came with the message.
      { match: "PARSER-BODY", text: "Saw the parser." },
      {
        match: "change it",
        toolCalls: [
          {
            name: "apply_patch",
            arguments: patch(["*** Update File: NOTES.md", "@@", "-print 1", "+print 2"]),
          },
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
  const type = (text: string) => tmux("send-keys", "-t", term.name, "-l", text);
  const key = (name: string) => tmux("send-keys", "-t", term.name, name);

  // Wait for the session (the picker lists the thread's workspace files).
  type("hi");
  key("Enter");
  await waitForScreen(/Done\.|Saw the parser\./);

  type("explain @prs");
  const picker = await waitForScreen(/> @src\/parser\.ts/);
  expect(picker).toContain("@src/printer.ts");
  expect(picker).not.toContain("@README.md");
  key("Tab");
  await waitForScreen(/explain @src\/parser\.ts/);
  key("Enter");
  await waitForScreen(/Saw the parser\./);

  type("/di");
  await waitForScreen(/> \/diff/);
  key("Tab");
  await waitForScreen(/> \/diff\s*│/);
  key("Enter");
  await waitForScreen(/No changes in this session yet\./);

  type("change it");
  key("Enter");
  await waitForScreen(/Done\.[\s\S]*Done\./);
  type("/diff");
  key("Enter");
  const diff = await waitForScreen(/Session changes: 1 file/);
  expect(diff).toContain("-print 1");
  expect(diff).toContain("+print 2");
}, 60_000);
