import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type DiffFile, inDiff, parseUnifiedDiff } from "./diff-hunks.js";
import { checkFindings, FINDING_LIMITS, UnreadableAnswerError } from "./review-findings.js";

const diff = `diff --git a/src/math.ts b/src/math.ts
index 1111111..2222222 100644
--- a/src/math.ts
+++ b/src/math.ts
@@ -1,4 +1,5 @@
 export function sum(xs: number[]): number {
   let total = 0;
-  for (let i = 0; i < xs.length; i++) total += xs[i];
+  for (let i = 0; i <= xs.length; i++) total += xs[i];
+  // summed
   return total;
@@ -20,2 +21,3 @@ export function mean(xs: number[]): number {
   const n = xs.length;
+  if (n === 0) return 0;
   return sum(xs) / n;
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
diff --git a/"we\\"ird\\tname.ts" b/"we\\"ird\\tname.ts"
new file mode 100644
--- /dev/null
+++ "b/we\\"ird\\tname.ts"
@@ -0,0 +1 @@
+x
`;

const files = parseUnifiedDiff(diff);

const finding = (over: Record<string, unknown> = {}) => ({
  file: "src/math.ts",
  start_line: 3,
  end_line: 3,
  severity: "error",
  title: "Off-by-one",
  explanation: "<= reads past the end.",
  ...over,
});

const answer = (...findings: unknown[]) => JSON.stringify({ findings });

describe("the diff's files and hunks", () => {
  it("lists each changed file with its new-side ranges; a deleted file has none and is left out; quoted names are unquoted", () => {
    expect(files).toEqual([
      {
        path: "src/math.ts",
        ranges: [
          { start: 1, end: 5 },
          { start: 21, end: 23 },
        ],
      },
      { path: 'we"ird\tname.ts', ranges: [{ start: 1, end: 1 }] },
    ]);
  });
});

describe("checking the model's findings against the diff", () => {
  it("keeps a finding on the changed lines, accepting ./ before the path", () => {
    const checked = checkFindings(
      answer(finding(), finding({ file: "./src/math.ts", start_line: 21, end_line: 23 })),
      files,
    );
    expect(checked.dropped).toEqual([]);
    expect(checked.findings.map((f) => [f.file, f.start_line, f.end_line])).toEqual([
      ["src/math.ts", 3, 3],
      ["src/math.ts", 21, 23],
    ]);
  });

  it("drops (never clamps) a finding outside the diff: another file, lines between hunks, reversed lines, a deleted file", () => {
    const checked = checkFindings(
      answer(
        finding({ file: "src/other.ts" }),
        finding({ start_line: 4, end_line: 21 }),
        finding({ start_line: 90, end_line: 95 }),
        finding({ start_line: 5, end_line: 3 }),
        finding({ file: "old.txt", start_line: 1, end_line: 1 }),
      ),
      files,
    );
    expect(checked.findings).toEqual([]);
    expect(checked.dropped.map((d) => d.reason)).toEqual([
      "src/other.ts:3-3: the diff does not change this file",
      "src/math.ts:4-21: not within the changed lines",
      "src/math.ts:90-95: not within the changed lines",
      "src/math.ts:5-3: ends before it starts",
      "old.txt:1-1: the diff does not change this file",
    ]);
  });

  it("drops a malformed finding (a field missing, a severity not in the schema, a line 0, an extra key) and keeps the rest", () => {
    const { start_line: _, ...lineless } = finding();
    const checked = checkFindings(
      answer(
        lineless,
        finding({ severity: "fatal" }),
        finding({ start_line: 0 }),
        finding({ extra: 1 }),
        "x",
        finding(),
      ),
      files,
    );
    expect(checked.findings).toHaveLength(1);
    expect(checked.dropped).toHaveLength(5);
    expect(checked.dropped[0]!.reason).toBe("finding 1 is not well formed (start_line)");
  });

  it(`keeps at most ${FINDING_LIMITS.findings} findings; the rest are counted as dropped`, () => {
    const many = Array.from({ length: FINDING_LIMITS.findings + 3 }, () => finding());
    const checked = checkFindings(answer(...many), files);
    expect(checked.findings).toHaveLength(FINDING_LIMITS.findings);
    expect(checked.dropped).toHaveLength(3);
  });

  it("an answer cut at the output limit keeps the findings it finished and says the last was lost (regression: SmolLM2's title ran to the cap)", () => {
    const whole = answer(finding(), finding({ start_line: 21, end_line: 21 }));
    const cut = `${whole.slice(0, whole.lastIndexOf('"title"'))}"title": "Error: 1.1.1.1.1.1.1`;
    const checked = checkFindings(cut, files);
    expect(checked.findings.map((f) => f.start_line)).toEqual([3]);
    expect(checked.dropped).toEqual([
      { reason: "the answer was cut short: its last finding was not finished" },
    ]);
    // Braces and brackets inside strings do not count; a cut inside the first finding leaves none.
    const tricky = `{"findings": [${JSON.stringify(finding({ title: 'a } ] { [ \\" b' }))}, {"file": "x`;
    expect(checkFindings(tricky, files).findings).toHaveLength(1);
    expect(checkFindings('{"findings": [{"file": "src/ma', files)).toEqual({
      findings: [],
      dropped: [{ reason: "the answer was cut short: its last finding was not finished" }],
    });
    expect(() => checkFindings('{"issues": [{"file": "src/ma', files)).toThrow(UnreadableAnswerError);
  });

  it("an answer that is not JSON, or has no findings list, is unreadable (not an empty review)", () => {
    expect(() => checkFindings("The code looks fine.", files)).toThrow(UnreadableAnswerError);
    expect(() => checkFindings('{"issues": []}', files)).toThrow(/no findings list/);
    expect(() => checkFindings("null", files)).toThrow(UnreadableAnswerError);
    expect(checkFindings('{"findings": []}', files)).toEqual({ findings: [], dropped: [] });
  });

  it("every finding kept lies inside one hunk of its file, whatever lines the model names (property)", () => {
    const rangesArb: fc.Arbitrary<DiffFile[]> = fc.array(
      fc.record({
        path: fc.constantFrom("a.ts", "b/c.ts", "d e.ts"),
        ranges: fc
          .array(fc.tuple(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 20 })), {
            minLength: 1,
            maxLength: 4,
          })
          .map((pairs) => pairs.map(([start, length]) => ({ start, end: start + length }))),
      }),
      { maxLength: 3 },
    );
    const lineFinding = fc.record({
      file: fc.constantFrom("a.ts", "b/c.ts", "d e.ts", "z.ts"),
      start_line: fc.integer({ min: 1, max: 240 }),
      end_line: fc.integer({ min: 1, max: 240 }),
    });
    fc.assert(
      fc.property(rangesArb, fc.array(lineFinding, { maxLength: 8 }), (diffFiles, named) => {
        const checked = checkFindings(answer(...named.map((n) => finding(n))), diffFiles);
        expect(checked.findings.length + checked.dropped.length).toBe(named.length);
        for (const kept of checked.findings) {
          expect(kept.start_line).toBeLessThanOrEqual(kept.end_line);
          expect(inDiff(diffFiles, kept.file, kept.start_line, kept.end_line)).toBe(true);
        }
      }),
    );
  });
});
