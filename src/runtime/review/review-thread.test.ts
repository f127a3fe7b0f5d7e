import { mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GenerateRequest } from "../../engine/engine.js";
import type { Script } from "../../engine/scripted/scripted-engine.js";
import type { ThreadEvent } from "../../protocol/agent.js";
import { AgentRuntime } from "../agent-runtime.js";
import { scriptedTiers } from "../test-support/scripted-tiers.js";
import { collectDiff } from "./review-diff.js";
import { REVIEW_ANSWER_SCHEMA } from "./review-findings.js";
import { REVIEW_TOOLS, runReview } from "./review-thread.js";
import { plantBug, SUM_PLANTED } from "./test-support/planted-bug.js";

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** A repository with src/sum.ts committed, then an off-by-one planted in the working tree. */
async function plantedBugRepo(): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-review-")));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  await plantBug(dir, "sum.ts");
  return dir;
}

async function reviewWith(script: Script) {
  const dir = await plantedBugRepo();
  const runtime = await AgentRuntime.start({
    cwd: dir,
    loadTier: scriptedTiers({ "*": { script } }),
    prewarm: false,
    userDir: null,
    hooks: { hooks: [], notices: [] },
    sessionsDir: path.join(dir, ".git", "sessions"),
  });
  cleanup.push(() => runtime.dispose());
  const diff = await collectDiff(dir, { kind: "uncommitted" });
  const events: ThreadEvent[] = [];
  const report = await runReview(
    diff,
    { client: runtime.client, model: runtime.modelId, contextBudget: runtime.contextBudget },
    { onEvent: (event) => events.push(event) },
  );
  return { dir, report, events };
}

const bugFinding = {
  file: "sum.ts",
  start_line: 3,
  end_line: 3,
  severity: "error",
  title: "Off-by-one in the loop bound",
  explanation: "i <= xs.length reads xs[xs.length], which is undefined; use i < xs.length.",
};

describe("a review thread", () => {
  it("is read-only by construction: it offers read_file, list_dir and search only, and asks for the findings schema", async () => {
    expect(REVIEW_TOOLS).toEqual(["read_file", "list_dir", "search"]);
    const requests: GenerateRequest[] = [];
    const { report } = await reviewWith((request) => {
      requests.push(request);
      return { text: JSON.stringify({ findings: [] }) };
    });
    expect(report.findings).toEqual([]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.tools?.map((tool) => tool.name)).toEqual(["read_file", "list_dir", "search"]);
    expect(requests[0]!.format).toEqual({
      type: "json_schema",
      name: "review_findings",
      schema: REVIEW_ANSWER_SCHEMA,
      strict: true,
    });
    const user = requests[0]!.messages.at(-1)!;
    expect(user.content).toContain("-  for (let i = 0; i < xs.length; i++)");
    expect(user.content).toContain("+  for (let i = 0; i <= xs.length; i++)");
  });

  it("finds the planted bug: the model reads the file, answers with a finding on the changed line, and it is kept", async () => {
    const { report, events } = await reviewWith((_request, turn) =>
      turn === 0
        ? { toolCalls: [{ name: "read_file", arguments: JSON.stringify({ path: "sum.ts" }) }] }
        : {
            text: JSON.stringify({ findings: [bugFinding, { ...bugFinding, start_line: 40, end_line: 41 }] }),
          },
    );
    const read = events.find((e) => e.type === "item.completed" && e.item.type === "tool_call");
    expect(read).toMatchObject({ item: { name: "read_file", status: "completed" } });
    expect(report).toMatchObject({
      version: 1,
      target: "uncommitted changes",
      findings: [bugFinding],
      dropped: 1,
    });
    expect(report.droppedReasons).toEqual([{ reason: "sum.ts:40-41: not within the changed lines" }]);
  });

  it("a model that calls apply_patch or shell anyway gets an unknown tool: nothing is written or run", async () => {
    const patch =
      "*** Begin Patch\n*** Update File: sum.ts\n@@\n-  for (let i = 0; i <= xs.length; i++) total += xs[i];\n+  // gone\n*** End Patch";
    const { dir, events } = await reviewWith((_request, turn) =>
      turn === 0
        ? {
            toolCalls: [
              { name: "apply_patch", arguments: JSON.stringify({ patch }) },
              { name: "shell", arguments: JSON.stringify({ command: ["touch", "ran"] }) },
            ],
          }
        : { text: JSON.stringify({ findings: [] }) },
    );
    const calls = events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "tool_call" ? [e.item] : [],
    );
    expect(calls.map((call) => [call.name, call.status])).toEqual([
      ["apply_patch", "failed"],
      ["shell", "failed"],
    ]);
    expect(calls[0]!.output).toMatch(
      /^Unknown tool 'apply_patch'\. Available: read_file, list_dir, search\./,
    );
    expect(await readFile(path.join(dir, "sum.ts"), "utf8")).toBe(SUM_PLANTED);
    await expect(readFile(path.join(dir, "ran"))).rejects.toThrow();
    expect(events.some((e) => e.type === "approval.requested")).toBe(false);
  });

  it("an engine that lets the model answer in prose beside the tools: the findings are asked for again with no tools, under the schema", async () => {
    const requests: GenerateRequest[] = [];
    const { report } = await reviewWith((request) => {
      requests.push(request);
      return request.tools?.length
        ? { text: "The loop bound is off by one on line 3." }
        : { text: JSON.stringify({ findings: [bugFinding] }) };
    });
    expect(report.findings).toEqual([bugFinding]);
    expect(requests).toHaveLength(2);
    expect(requests[1]!.tools ?? []).toEqual([]);
    expect(requests[1]!.format).toMatchObject({ type: "json_schema", name: "review_findings" });
    expect(requests[1]!.messages.at(-1)!.content).toContain(
      "Your notes from reading it:\nThe loop bound is off by one on line 3.",
    );
  });

  it("a model that keeps reading until a limit stops it is still asked for its findings", async () => {
    const requests: GenerateRequest[] = [];
    const { report } = await reviewWith((request) => {
      requests.push(request);
      return request.tools?.length
        ? { toolCalls: [{ name: "read_file", arguments: JSON.stringify({ path: "sum.ts" }) }] }
        : { text: JSON.stringify({ findings: [bugFinding] }) };
    });
    expect(report.findings).toEqual([bugFinding]);
    // A limit stopped the reads (the same call repeated, else 6 rounds), then came the request with no tools.
    const withTools = requests.filter((request) => request.tools?.length).length;
    expect(withTools).toBeGreaterThan(1);
    expect(withTools).toBeLessThanOrEqual(7);
    expect(requests.at(-1)!.tools ?? []).toEqual([]);
  });

  it("--diff-only: one request with no tools at all, under the schema", async () => {
    const requests: GenerateRequest[] = [];
    const dir = await plantedBugRepo();
    const runtime = await AgentRuntime.start({
      cwd: dir,
      loadTier: scriptedTiers({
        "*": {
          script: (request) => {
            requests.push(request);
            return { text: JSON.stringify({ findings: [bugFinding] }) };
          },
        },
      }),
      prewarm: false,
      userDir: null,
      hooks: { hooks: [], notices: [] },
    });
    cleanup.push(() => runtime.dispose());
    const model = { client: runtime.client, model: runtime.modelId, contextBudget: runtime.contextBudget };
    const diff = await collectDiff(dir, { kind: "uncommitted" });
    const report = await runReview(diff, model, { readFiles: false });
    expect(report.findings).toEqual([bugFinding]);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.tools ?? []).toEqual([]);
    expect(requests[0]!.format).toMatchObject({ type: "json_schema", name: "review_findings" });
    expect(requests[0]!.messages[0]!.content).toContain("Review from the diff shown; there are no tools.");
  });

  it("an answer that is still not findings JSON fails the review with what the model said", async () => {
    await expect(reviewWith(() => ({ text: "Looks good to me!" }))).rejects.toThrow(
      /the model's answer is not JSON: "Looks good to me!"/,
    );
  });
});
