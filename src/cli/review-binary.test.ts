import { mkdtemp, readFile, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { beforeAll, describe, expect, test } from "vitest";
import { REVIEW_REPORT_SCHEMA } from "../runtime/review/review-findings.js";
import { git, plantBug } from "../runtime/review/test-support/planted-bug.js";
import { newAjv, sarifErrors } from "../runtime/review/test-support/sarif-schema.js";
import { runSpark } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const finding = {
  file: "src/sum.ts",
  start_line: 3,
  end_line: 3,
  severity: "error",
  title: "Off-by-one in the loop bound",
  explanation: "i <= xs.length reads past the end; use i < xs.length.",
};

async function tempDir(prefix: string): Promise<string> {
  return realpath(await mkdtemp(path.join(os.tmpdir(), prefix)));
}

describe("spark review (the real binary, scripted engine)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    repo = await tempDir("spark-review-bin-");
    await plantBug(repo, "src/sum.ts");
    const script = path.join(await tempDir("spark-review-script-"), "script.json");
    await writeFile(
      script,
      JSON.stringify([
        { text: JSON.stringify({ findings: [finding, { ...finding, file: "src/other.ts" }] }) },
      ]),
    );
    const home = await tempDir("spark-review-home-");
    env = {
      ...testEngineEnv({ script }),
      XDG_CONFIG_HOME: home,
      SPARK_CONFIG: path.join(home, "none.toml"),
      SPARK_SESSIONS_DIR: path.join(home, "sessions"),
    };
  });

  test("--uncommitted --format sarif on a planted bug writes SARIF 2.1.0 the schema accepts, the finding on the bug's line", async () => {
    const run = await runSpark(
      ["review", "--uncommitted", "--format", "sarif", "--output", "spark.sarif"],
      repo,
      env,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(
      "spark: dropped a finding: src/other.ts:3-3: the diff does not change this file",
    );
    const log = JSON.parse(await readFile(path.join(repo, "spark.sarif"), "utf8"));
    expect(sarifErrors(log)).toEqual([]);
    expect(log.runs[0].tool.driver.name).toBe("spark");
    expect(log.runs[0].results).toEqual([
      expect.objectContaining({
        level: "error",
        locations: [
          {
            physicalLocation: {
              artifactLocation: { uri: "src/sum.ts" },
              region: { startLine: 3, endLine: 3 },
            },
          },
        ],
      }),
    ]);
  });

  test("--format json validates against its published schema and reports what was dropped", async () => {
    const run = await runSpark(["review", "--format", "json"], repo, env);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(newAjv().compile(REVIEW_REPORT_SCHEMA)(report)).toBe(true);
    expect(report).toEqual({
      version: 1,
      target: "uncommitted changes",
      findings: [finding],
      dropped: 1,
      truncated: false,
    });
  });

  test("text by default: the finding at file:line, then the summary", async () => {
    const run = await runSpark(["review"], repo, env);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `src/sum.ts:3 error: Off-by-one in the loop bound\n  ${finding.explanation}\n` +
        "1 finding (1 error) in uncommitted changes; 1 dropped (not on the diff's lines, or not well formed).\n",
    );
  });

  test("nothing changed: says there is nothing to review and exits 0 (with --format sarif, an empty but valid log)", async () => {
    const clean = await tempDir("spark-review-clean-");
    git(clean, "init", "-q");
    await writeFile(path.join(clean, "a.txt"), "a\n");
    git(clean, "add", ".");
    git(clean, "commit", "-q", "-m", "a");
    const text = await runSpark(["review"], clean, env);
    expect(text).toEqual({
      code: 0,
      stdout: "",
      stderr: "spark: nothing to review: no changed lines in uncommitted changes.\n",
    });
    const sarif = await runSpark(["review", "--format", "sarif"], clean, env);
    expect(sarif.code).toBe(0);
    expect(sarifErrors(JSON.parse(sarif.stdout))).toEqual([]);
  });

  test("failures: not a git repository, an unknown --base, two targets at once (exit 1, the reason said)", async () => {
    const plain = await tempDir("spark-review-plain-");
    const outside = await runSpark(["review"], plain, env);
    expect(outside.code).toBe(1);
    expect(outside.stderr).toMatch(/^spark: .* is not in a git repository: spark review reviews a git diff/);
    const base = await runSpark(["review", "--base", "origin/nope"], repo, env);
    expect(base.code).toBe(1);
    expect(base.stderr).toContain(
      "spark: --base 'origin/nope' is not a branch, tag or commit of this repository",
    );
    const both = await runSpark(["review", "--base", "main", "--commit", "HEAD"], repo, env);
    expect(both.code).toBe(1);
    expect(both.stderr).toBe("spark: --base and --commit name different changes: give one.\n");
    const format = await runSpark(["review", "--format", "xml"], repo, env);
    expect(format.code).toBe(1);
    expect(format.stderr).toContain("argument 'xml' is invalid. Allowed choices are text, json, sarif.");
  });
});
