import { mkdtemp, realpath, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { AgentRuntime } from "../runtime/agent-runtime.js";
import { collectDiff, fitDiff } from "../runtime/review/review-diff.js";
import { REVIEW_REPORT_SCHEMA } from "../runtime/review/review-findings.js";
import { formatReview } from "../runtime/review/review-formats.js";
import { runReview } from "../runtime/review/review-thread.js";
import { plantBug } from "../runtime/review/test-support/planted-bug.js";
import { newAjv, sarifErrors } from "../runtime/review/test-support/sarif-schema.js";
import { FETCH_SMOLLM2, smollm2Path } from "./test-support/smollm2.js";

/**
 * spark review's path on SmolLM2-135M-Instruct: a model this small finds what it finds, so only
 * the shape is checked: the review completes and its SARIF and JSON are valid, every finding kept
 * lies on the diff's lines (the rest were dropped and counted).
 */
const model = smollm2Path();
if (!model) console.log(`SmolLM2 review test skipped: no model; fetch it with \`${FETCH_SMOLLM2}\``);

describe.skipIf(!model)("spark review on SmolLM2-135M-Instruct", () => {
  const cleanup: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  test("a planted off-by-one: the review completes, its SARIF and JSON are well formed", async () => {
    const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-review-smollm2-")));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await plantBug(dir, "src/sum.ts");

    const runtime = await AgentRuntime.start({
      cwd: dir,
      model: model!,
      contextSize: 2048,
      prewarm: false,
      userDir: null,
      hooks: { hooks: [], notices: [] },
      config: {
        defaultTier: "fast",
        delegateTier: null,
        tiers: { fast: { engine: "llama" } },
        sources: [],
        diagnostics: false,
      },
    });
    cleanup.push(() => runtime.dispose());
    const diff = fitDiff(await collectDiff(dir, { kind: "uncommitted" }), 2000);
    // --diff-only: one generation (with tools offered, SmolLM2 may read until its rounds run out,
    // and the second request doubles the time on a busy CPU).
    const on = { client: runtime.client, model: runtime.modelId, contextBudget: runtime.contextBudget };
    const { droppedReasons, ...report } = await runReview(diff, on, { readFiles: false });
    expect(report.dropped).toBe(droppedReasons.length);
    for (const finding of report.findings) {
      expect(finding.file).toBe("src/sum.ts");
      expect(finding.start_line).toBeGreaterThanOrEqual(1);
      expect(finding.end_line).toBeLessThanOrEqual(5);
    }
    expect(sarifErrors(JSON.parse(formatReview(report, "sarif", "0.0.0")))).toEqual([]);
    expect(newAjv().compile(REVIEW_REPORT_SCHEMA)(JSON.parse(formatReview(report, "json", "0.0.0")))).toBe(
      true,
    );
  }, 600_000);
});
