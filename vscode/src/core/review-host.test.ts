import { mkdir, mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type ServeStack, startServe } from "../../../src/cli/serve-stack.js";
import { HostClient } from "../../../src/client-core/host-client.js";
import { nodeSocketFactory } from "../../../src/client-core/node-socket.js";
import { ScriptedEngine } from "../../../src/engine/scripted/scripted-engine.js";
import {
  plantBug,
  plantedBugFinding,
  reviewScript,
} from "../../../src/runtime/review/test-support/planted-bug.js";
import { REVIEW_SOURCE, reviewCommand, reviewOutcome, reviewRoot } from "./review-problems.js";
import { agentSocketUrl } from "./spark-launcher.js";

// The extension's /review on a real `spark serve` (scripted model, real git): the workspace is a
// folder inside the repository, so the host's paths (relative to the repository) must be resolved
// against the repository, not the folder, to land on the file.

const finding = plantedBugFinding("app/sum.ts");

/** The review finds the planted bug; anything else gets "ok". */
const script = reviewScript([finding]);

let repo: string;
let stack: ServeStack;
let client: HostClient;

beforeAll(async () => {
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-vscode-review-")));
  await plantBug(repo, "app/sum.ts");
  const workspace = path.join(repo, "app");
  await mkdir(workspace, { recursive: true });
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-vscode-review-sessions-"));
  const engine = new ScriptedEngine({ script, tokensPerSecond: 2000 });
  stack = await startServe({ engine, cwd: workspace, sessionsDir: sessions, webDir: null, apiKeys: [] });
  client = new HostClient({ url: agentSocketUrl(stack.server.url), createSocket: nodeSocketFactory });
  await client.connect();
});

afterAll(async () => {
  client?.dispose();
  await stack?.close();
});

test("/review in VS Code puts the host's finding on the repository's file, at its 0-based lines", async () => {
  const thread = await client.startThread();
  expect(thread.cwd).toBe(path.join(repo, "app"));
  const steps: string[] = [];
  const answer = await client.review(thread.id, reviewCommand("/review")!, (step) => steps.push(step));
  expect(steps.length).toBeGreaterThan(0);
  const outcome = reviewOutcome(answer, reviewRoot(thread.cwd));
  expect(outcome.diagnostics).toEqual([
    {
      file: path.join(repo, "app", "sum.ts"),
      startLine: 2,
      endLine: 2,
      severity: "error",
      message: `${finding.title}\n${finding.explanation}`,
      source: REVIEW_SOURCE,
    },
  ]);
  expect(outcome.notices.map((notice) => notice.text)).toContain(
    "app/sum.ts:3 error: Off-by-one in the loop bound — i <= xs.length reads past the end.",
  );
});

test("/review of a commit with nothing changed clears the diagnostics; a ref git does not know is refused", async () => {
  const thread = await client.startThread();
  const nothing = await client.review(thread.id, reviewCommand("/review --base HEAD")!);
  const outcome = reviewOutcome(nothing, reviewRoot(thread.cwd));
  expect(outcome.diagnostics).toEqual([]);
  expect(outcome.notices).toEqual(nothing.notes.map((text) => ({ text, tone: "info" })));
  await expect(client.review(thread.id, reviewCommand("/review --commit no-such-ref")!)).rejects.toThrow(
    /no-such-ref/,
  );
});
