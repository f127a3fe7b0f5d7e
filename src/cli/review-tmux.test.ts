import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import { plantBug } from "../runtime/review/test-support/planted-bug.js";
import {
  sparkBin,
  startAttachedSpark,
  startWorkspaceServe,
  type TmuxSession,
  tmuxSession,
  type WorkspaceServe,
} from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const finding = {
  file: "sum.ts",
  start_line: 3,
  end_line: 3,
  severity: "error",
  title: "Off-by-one in the loop bound",
  explanation: "i <= xs.length reads past the end.",
};

const term = tmuxSession(`spark-review-attach-${process.pid}`);
const own = tmuxSession(`spark-review-own-${process.pid}`);
let serve: WorkspaceServe | null = null;
afterAll(async () => {
  term.kill();
  own.kill();
  await serve?.stop();
});

/** A script file, outside any repository under review: the review finds the planted bug. */
async function reviewScript(): Promise<string> {
  const script = path.join(await mkdtemp(path.join(os.tmpdir(), "spark-review-tmux-")), "script.json");
  await writeFile(
    script,
    JSON.stringify([
      { match: "Review uncommitted changes", text: JSON.stringify({ findings: [finding] }) },
      { text: "Noted." },
    ]),
  );
  return script;
}

function send(session: TmuxSession, text: string): void {
  session.tmux("send-keys", "-t", session.name, "-l", text);
  session.tmux("send-keys", "-t", session.name, "Enter");
}

test("/review in a terminal attached to spark serve: the server's host reviews the workspace and the terminal shows its steps and findings", async () => {
  const script = await reviewScript();
  serve = await startWorkspaceServe([], testEngineEnv({ script, tokensPerSecond: 400 }));
  await plantBug(serve.repo, "sum.ts");
  startAttachedSpark(term, serve);
  await term.waitForScreen(/Ask Spark|\/help/);
  send(term, "/review");
  const screen = await term.waitForScreen(/1 finding \(1 error\) in uncommitted changes\./, 60_000);
  expect(screen).toContain("Reviewing 1 file (uncommitted changes) on");
  expect(screen).toContain("sum.ts:3 error: Off-by-one in the loop bound");
  expect(screen).not.toContain("/review is not available here");
}, 90_000);

test("/review in a spark running its own agent goes through its in-process host the same way", async () => {
  const repo = await mkdtemp(path.join(os.tmpdir(), "spark-review-own-"));
  await plantBug(repo, "sum.ts");
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-review-own-sessions-"));
  const engine = Object.entries(testEngineEnv({ script: await reviewScript() })).flatMap(([name, value]) => [
    "-e",
    `${name}=${value}`,
  ]);
  const command = `cd ${repo} && SPARK_SESSIONS_DIR=${sessions} "${process.execPath}" "${sparkBin}"`;
  own.tmux(
    "new-session",
    "-d",
    "-s",
    own.name,
    "-x",
    "120",
    "-y",
    "40",
    "-e",
    "CI=false",
    ...engine,
    command,
  );
  // /review, like the session's other commands, waits for the session to start (the status bar says idle).
  await own.waitForScreen(/ · idle/, 60_000);
  send(own, "/review");
  const screen = await own.waitForScreen(/1 finding \(1 error\) in uncommitted changes\./, 60_000);
  expect(screen).toContain("sum.ts:3 error: Off-by-one in the loop bound");
}, 90_000);
