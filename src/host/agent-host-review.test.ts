import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Workspace } from "../agent/workspace.js";
import type { HostClient } from "../client-core/host-client.js";
import { slashReview } from "../client-core/review-text.js";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { MAX_REVIEW_REF } from "../protocol/agent-requests.js";
import { reviewSession } from "../runtime/review/session-review.js";
import { plantBug } from "../runtime/review/test-support/planted-bug.js";
import { AgentHost } from "./agent-host.js";
import { connectHost, type HostTestClient, type HostTestEvent } from "./test-support/host-client.js";
import { manyWords, type ScriptedStack, startScriptedStack } from "./test-support/scripted-stack.js";
import { type Cleanups, connectCoreClient } from "./test-support/threadless-host.js";

const finding = {
  file: "sum.ts",
  start_line: 3,
  end_line: 3,
  severity: "error",
  title: "Off-by-one in the loop bound",
  explanation: "i <= xs.length reads past the end.",
};
/** A finding on a line the diff does not show: the host drops it and says why. */
const offDiff = { ...finding, start_line: 40, end_line: 40, title: "Not on the diff" };

/**
 * The review thread (asked under the findings schema) reads sum.ts first, then answers the
 * planted finding and one off the diff; "long" streams long enough to act on while it runs.
 */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (request.format) {
    if (request.tools?.length && last?.role === "user")
      return { toolCalls: [{ name: "read_file", arguments: JSON.stringify({ path: "sum.ts" }) }] };
    return { text: JSON.stringify({ findings: [finding, offDiff] }) };
  }
  if (last?.role === "user" && last.content === "long") return { text: manyWords(400) };
  return { text: "ok" };
};

let stack: ScriptedStack;
let repo: string;
let notRepo: string;
/** Where the next thread works. */
let nextRoot = "";
const cleanups: Cleanups = [];
let client: HostClient;

beforeAll(async () => {
  repo = await mkdtemp(path.join(os.tmpdir(), "spark-review-host-"));
  await plantBug(repo, "sum.ts");
  notRepo = await mkdtemp(path.join(os.tmpdir(), "spark-review-none-"));
  stack = await startScriptedStack({
    script,
    // "long" streams for about a second: a request sent right after its start finds it running.
    tokensPerSecond: 400,
    host: ({ newThread, client: responses }) =>
      new AgentHost({
        create: async () => newThread({ workspace: new Workspace(nextRoot), model: "scripted" }),
        resume: async () => null,
        list: async () => [],
        rename: async () => null,
        remove: async () => false,
        // As the runtime's session source does, on the test server's scripted model.
        review: (thread, target, options) =>
          reviewSession(
            thread.info.cwd,
            target,
            { client: responses, model: thread.model, contextBudget: 32_768 },
            options,
          ),
      }),
  });
  client = await connectCoreClient(stack.agentUrl, cleanups);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await stack.close();
});

async function request(c: HostTestClient, id: string, body: object): Promise<HostTestEvent> {
  const answer = c.next((e) => (e.type === "ack" || e.type === "error") && e.request_id === id);
  c.send({ ...body, request_id: id });
  return answer;
}

async function startIn(c: HostTestClient, root: string): Promise<string> {
  nextRoot = root;
  const ack = await request(c, `start-${c.events.length}`, { type: "thread.start" });
  expect(ack.type).toBe("ack");
  return ack.thread_id as string;
}

describe("agent host: thread.review", () => {
  test("reviews the thread's workspace read-only: progress, then the findings checked against the diff, then the ack", async () => {
    const c = await connectHost(stack.agentUrl);
    const thread = await startIn(c, repo);
    const from = c.events.length;
    const ack = await request(c, "review", { type: "thread.review", thread_id: thread });
    expect(ack).toMatchObject({ type: "ack", request_id: "review", thread_id: thread });
    const answered = c.events.slice(from);
    const review = answered.find((e) => e.type === "thread.review")!;
    expect(review).toEqual({
      type: "thread.review",
      request_id: "review",
      thread_id: thread,
      version: 1,
      target: "uncommitted changes",
      findings: [finding],
      dropped: 1,
      truncated: false,
      notes: [expect.stringMatching(/^Dropped a finding: .*sum\.ts/)],
    });
    const progress = answered.filter((e) => e.type === "review.progress").map((e) => e.message);
    expect(progress).toEqual(["Reviewing 1 file (uncommitted changes) on scripted", "read_file sum.ts"]);
    // Progress and findings before the ack, none of them stamped (they answer one client).
    expect(answered.indexOf(review)).toBeLessThan(answered.indexOf(ack));
    expect(answered.filter((e) => e.type.startsWith("review") || e.type === "thread.review")).toSatisfy(
      (events: HostTestEvent[]) => events.every((e) => e.seq === undefined),
    );
    // The session itself took no turn: the review ran in a thread of its own.
    expect(answered.some((e) => e.type === "turn.started" || e.type === "item.started")).toBe(false);
    c.ws.close();
  });

  test("a base with nothing since it says so, with no findings", async () => {
    const c = await connectHost(stack.agentUrl);
    const thread = await startIn(c, repo);
    const from = c.events.length;
    const target = { kind: "base", base: "main" };
    expect(await request(c, "base", { type: "thread.review", thread_id: thread, target })).toMatchObject({
      type: "ack",
    });
    expect(c.events.slice(from).find((e) => e.type === "thread.review")).toMatchObject({
      target: "main...HEAD",
      findings: [],
      notes: ["Nothing to review: no changed lines in main...HEAD."],
    });
    c.ws.close();
  });

  test("refused while a turn runs, and while another review of the thread runs", async () => {
    const c = await connectHost(stack.agentUrl);
    const thread = await startIn(c, repo);
    const turn = await request(c, "turn", { type: "turn.start", thread_id: thread, input: "long" });
    const busy = await request(c, "busy", { type: "thread.review", thread_id: thread });
    expect(busy).toMatchObject({
      type: "error",
      status: 409,
      error: { code: "response_in_progress", message: expect.stringContaining("A turn is running") },
    });
    await c.next((e) => e.type === "turn.completed" && e.turn_id === turn.turn_id, 0);
    // Two at once: the second is refused, the first runs to its findings.
    const first = request(c, "first", { type: "thread.review", thread_id: thread });
    const second = await request(c, "second", { type: "thread.review", thread_id: thread });
    expect(second).toMatchObject({ type: "error", error: { code: "response_in_progress" } });
    expect(await first).toMatchObject({ type: "ack", request_id: "first" });
    c.ws.close();
  });

  test("a target that could reach git as an option, or is not one ref, is rejected at the edge", async () => {
    const c = await connectHost(stack.agentUrl);
    const thread = await startIn(c, repo);
    const targets = [
      { kind: "base", base: "" },
      { kind: "base", base: "b".repeat(300) },
      { kind: "base", base: "b".repeat(MAX_REVIEW_REF + 1) },
      { kind: "base", base: "--upload-pack=x" },
      { kind: "commit", sha: "-c" },
      { kind: "commit", sha: "HEAD --output=/tmp/x" },
      { kind: "base", base: "main..evil" },
      { kind: "base", base: "a:b" },
      { kind: "commit" },
      { kind: "uncommitted", base: "main" },
      { kind: "staged" },
      "uncommitted",
    ];
    for (const [i, target] of targets.entries()) {
      const answer = await request(c, `bad-${i}`, { type: "thread.review", thread_id: thread, target });
      expect(answer, JSON.stringify(target)).toMatchObject({
        type: "error",
        status: 400,
        error: { code: "invalid_event" },
      });
    }
    // None reached git or the model: no review ran.
    expect(c.events.some((e) => e.type === "review.progress" || e.type === "thread.review")).toBe(false);
    const unknown = await request(c, "unknown", { type: "thread.review", thread_id: "thr_nobody" });
    expect(unknown).toMatchObject({ type: "error", error: { code: "not_found" } });
    c.ws.close();
  });

  test("a workspace outside git is a clear error; a base git does not know too", async () => {
    const c = await connectHost(stack.agentUrl);
    const outside = await startIn(c, notRepo);
    const error = await request(c, "outside", { type: "thread.review", thread_id: outside });
    expect(error).toMatchObject({
      type: "error",
      status: 400,
      error: { code: "invalid_request", message: expect.stringContaining("is not in a git repository") },
    });
    const inRepo = await startIn(c, repo);
    const unknownBase = await request(c, "nope", {
      type: "thread.review",
      thread_id: inRepo,
      target: { kind: "base", base: "nope" },
    });
    expect(unknownBase).toMatchObject({
      type: "error",
      error: { message: expect.stringContaining("'nope' is not a branch, tag or commit") },
    });
    c.ws.close();
  });

  test("the client core's /review: progress heard, the findings as text; bad arguments never reach the host", async () => {
    nextRoot = repo;
    const thread = await client.startThread();
    const heard: string[] = [];
    const text = await slashReview(client, thread.id, "", (step) => heard.push(step));
    expect(text).toContain("sum.ts:3 error: Off-by-one in the loop bound");
    expect(text).toContain("1 finding (1 error) in uncommitted changes; 1 dropped");
    expect(text.split("\n")[0]).toMatch(/^Dropped a finding: /);
    expect(heard).toContain("read_file sum.ts");
    await expect(slashReview(client, thread.id, "--base --upload-pack=x")).rejects.toThrow(
      "'--upload-pack=x' is not a branch, tag or commit",
    );
    await expect(slashReview(client, thread.id, "--frobnicate")).rejects.toThrow(
      "Usage: /review [--uncommitted | --base BRANCH | --commit SHA]",
    );
    await expect(slashReview(client, thread.id, "--base main --commit HEAD")).rejects.toThrow(
      "Give one change to review",
    );
  });
});
