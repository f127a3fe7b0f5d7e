import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import { plantBug } from "../runtime/review/test-support/planted-bug.js";
import {
  startAttachedSpark,
  startWorkspaceServe,
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
let serve: WorkspaceServe | null = null;
afterAll(async () => {
  term.kill();
  await serve?.stop();
});

test("/review in a terminal attached to spark serve: the server's host reviews the workspace and the terminal shows its steps and findings", async () => {
  // Outside the repository, so the script is no change to review.
  const script = path.join(await mkdtemp(path.join(os.tmpdir(), "spark-review-attach-")), "script.json");
  await writeFile(
    script,
    JSON.stringify([
      { match: "Review uncommitted changes", text: JSON.stringify({ findings: [finding] }) },
      { text: "Noted." },
    ]),
  );
  serve = await startWorkspaceServe([], testEngineEnv({ script, tokensPerSecond: 400 }));
  await plantBug(serve.repo, "sum.ts");
  startAttachedSpark(term, serve);
  await term.waitForScreen(/Ask Spark|\/help/);
  term.tmux("send-keys", "-t", term.name, "-l", "/review");
  term.tmux("send-keys", "-t", term.name, "Enter");
  const screen = await term.waitForScreen(/1 finding \(1 error\) in uncommitted changes\./, 60_000);
  expect(screen).toContain("Reviewing 1 file (uncommitted changes) on");
  expect(screen).toContain("sum.ts:3 error: Off-by-one in the loop bound");
  expect(screen).not.toContain("/review is not available here");
}, 90_000);
