import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Finding, REVIEW_REPORT_SCHEMA, type ReviewReport, SEVERITIES } from "./review-findings.js";
import { formatReview, sarifLog } from "./review-formats.js";
import { newAjv, sarifErrors } from "./test-support/sarif-schema.js";

const finding: Finding = {
  file: "src/math.ts",
  start_line: 3,
  end_line: 4,
  severity: "error",
  title: "Off-by-one in the loop bound",
  explanation: "i <= xs.length reads past the end; use i < xs.length.",
};

const report = (findings: Finding[], dropped = 0): ReviewReport => ({
  version: 1,
  target: "uncommitted changes",
  findings,
  dropped,
  truncated: false,
});

const findingArb: fc.Arbitrary<Finding> = fc
  .record({
    file: fc
      .array(
        fc.string({ minLength: 1, maxLength: 12 }).filter((s) => !s.includes("/")),
        { minLength: 1, maxLength: 4 },
      )
      .map((parts) => parts.join("/"))
      .filter((path) => path.length <= 200),
    start_line: fc.integer({ min: 1, max: 100_000 }),
    length: fc.integer({ min: 0, max: 50 }),
    severity: fc.constantFrom(...SEVERITIES),
    title: fc.string({ minLength: 1, maxLength: 100 }),
    explanation: fc.string({ minLength: 1, maxLength: 400 }),
  })
  .map(({ length, ...rest }) => ({ ...rest, end_line: rest.start_line + length }));

describe("spark review's formats", () => {
  it("writes SARIF 2.1.0 that the official schema accepts, for any findings (file names with spaces, #, % and unicode too)", () => {
    fc.assert(
      fc.property(fc.array(findingArb, { maxLength: 8 }), (findings) => {
        const log = JSON.parse(formatReview(report(findings), "sarif", "1.2.3"));
        expect(sarifErrors(log)).toEqual([]);
        expect(log.runs[0].results).toHaveLength(findings.length);
      }),
      { numRuns: 200 },
    );
  });

  it("SARIF: driver spark, a rule per severity and title, results located relative to the repository root", () => {
    const second = { ...finding, start_line: 9, end_line: 9 };
    const warning = {
      ...finding,
      file: "src/my file.ts",
      severity: "warning" as const,
      title: "Unchecked result",
    };
    const log = sarifLog(report([finding, second, warning]), "1.2.3");
    const run = log.runs[0]!;
    expect(run.tool.driver).toMatchObject({ name: "spark", version: "1.2.3" });
    expect(run.tool.driver.rules.map((rule) => rule.id)).toEqual([
      "spark/error/off-by-one-in-the-loop-bound",
      "spark/warning/unchecked-result",
    ]);
    expect(run.results.map((result) => [result.ruleIndex, result.level])).toEqual([
      [0, "error"],
      [0, "error"],
      [1, "warning"],
    ]);
    expect(run.results[0]!.locations[0]!.physicalLocation).toEqual({
      artifactLocation: { uri: "src/math.ts" },
      region: { startLine: 3, endLine: 4 },
    });
    expect(run.results[2]!.locations[0]!.physicalLocation.artifactLocation.uri).toBe("src/my%20file.ts");
    expect(sarifErrors(log)).toEqual([]);
  });

  it("an empty review is still a valid SARIF log (upload-sarif then clears earlier alerts)", () => {
    const log = sarifLog(report([]), "1.2.3");
    expect(sarifErrors(log)).toEqual([]);
    expect(log.runs[0]!.results).toEqual([]);
    // The schema does check: a level SARIF does not have is refused.
    const wrong = sarifLog(report([finding]), "1.2.3") as unknown as {
      runs: Array<{ results: Array<{ level: string }> }>;
    };
    wrong.runs[0]!.results[0]!.level = "fatal";
    expect(sarifErrors(wrong)).not.toEqual([]);
  });

  it("writes JSON that its published schema accepts, and the schema refuses a finding without a line", () => {
    const validate = newAjv().compile(REVIEW_REPORT_SCHEMA);
    fc.assert(
      fc.property(fc.array(findingArb, { maxLength: 8 }), fc.nat(20), (findings, dropped) => {
        expect(validate(JSON.parse(formatReview(report(findings, dropped), "json", "1")))).toBe(true);
      }),
    );
    const { start_line: _, ...lineless } = finding;
    expect(validate({ ...report([]), findings: [lineless] })).toBe(false);
    expect(validate({ ...report([]), findings: [{ ...finding, severity: "fatal" }] })).toBe(false);
  });

  it("text: each finding at file:lines with its severity, then what was found and dropped", () => {
    expect(formatReview(report([finding], 2), "text", "1")).toBe(
      "src/math.ts:3-4 error: Off-by-one in the loop bound\n" +
        "  i <= xs.length reads past the end; use i < xs.length.\n" +
        "1 finding (1 error) in uncommitted changes; 2 dropped (not on the diff's lines, or not well formed).\n",
    );
    expect(formatReview(report([]), "text", "1")).toBe("No findings in uncommitted changes.\n");
  });
});
