import { mkdtemp, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test, vi } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "../host/test-support/host-client.js";
import {
  plantBug,
  plantedBugFinding,
  reviewScript,
  SUM_ORIGINAL,
  SUM_PLANTED,
} from "../runtime/review/test-support/planted-bug.js";
import { type ServeStack, startServe } from "./serve-stack.js";

// thread.review on the stack `spark serve` runs (the runtime's session source, real git): a
// worktree session reviews its worktree, not the tree the server started in.

const finding = plantedBugFinding("sum.ts");

/** The review finds the planted bug; anything else gets "ok". */
const script = reviewScript([finding]);

let stack: ServeStack;
let client: HostTestClient;
let repo: string;

beforeAll(async () => {
  // Where Spark's worktrees go (the host reads it from its environment).
  vi.stubEnv("SPARK_HOME", await mkdtemp(path.join(os.tmpdir(), "spark-review-wt-home-")));
  repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-review-wt-repo-")));
  await plantBug(repo, "sum.ts");
  // The main tree as committed: only the worktree will hold the bug.
  await writeFile(path.join(repo, "sum.ts"), SUM_ORIGINAL);
  const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-review-wt-sessions-"));
  const engine = new ScriptedEngine({ script, tokensPerSecond: 2000 });
  stack = await startServe({ engine, cwd: repo, sessionsDir: sessions, webDir: null, apiKeys: [] });
  client = await connectHost(`${stack.server.url.replace("http", "ws")}/v1/agent`);
});

afterAll(async () => {
  client?.ws.close();
  await stack?.close();
  vi.unstubAllEnvs();
});

async function request(id: string, message: object): Promise<HostTestEvent> {
  const answer = client.next((e) => e.request_id === id && (e.type === "ack" || e.type === "error"));
  client.send({ ...message, request_id: id });
  return answer;
}

async function review(id: string, threadId: string): Promise<HostTestEvent> {
  const answer = client.next((e) => e.type === "thread.review" && e.request_id === id);
  expect(await request(id, { type: "thread.review", thread_id: threadId })).toMatchObject({ type: "ack" });
  return answer;
}

test("a worktree session's /review reviews its worktree; the main tree's session finds nothing there", async () => {
  const main = (await request("main", { type: "thread.start" })).thread_id as string;
  const started = client.next((e) => e.type === "thread.started" && e.thread_id !== main);
  const tree = (await request("tree", { type: "thread.start", worktree: { name: "fix" } }))
    .thread_id as string;
  const worktree = ((await started).thread as { cwd: string }).cwd;
  await writeFile(path.join(worktree, "sum.ts"), SUM_PLANTED);

  expect(await review("r-tree", tree)).toMatchObject({ target: "uncommitted changes", findings: [finding] });
  expect(await review("r-main", main)).toMatchObject({
    findings: [],
    notes: ["Nothing to review: no changed lines in uncommitted changes."],
  });
});
