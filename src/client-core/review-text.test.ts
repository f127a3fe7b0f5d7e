import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { reviewTargetSchema } from "../protocol/agent-requests.js";
import { parseReviewArgs, REVIEW_USAGE, threadReviewText } from "./review-text.js";

describe("/review's arguments and text", () => {
  test("whatever is typed, /review either refuses it or names a target the host accepts, never one git could read as an option", () => {
    const word = fc.oneof(
      fc.constantFrom(
        "--base",
        "--commit",
        "--uncommitted",
        "main",
        "-x",
        "--upload-pack=x",
        "a..b",
        "HEAD~1",
      ),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(fc.array(word, { maxLength: 4 }), (words) => {
        let target: ReturnType<typeof parseReviewArgs>;
        try {
          target = parseReviewArgs(words.join(" "));
        } catch (error) {
          expect((error as Error).message).toContain(REVIEW_USAGE);
          return;
        }
        expect(reviewTargetSchema.safeParse(target).success).toBe(true);
        const ref = target.kind === "base" ? target.base : target.kind === "commit" ? target.sha : "";
        expect(ref.startsWith("-")).toBe(false);
      }),
    );
  });

  test("the findings by file:lines and severity, notes first; nothing to review is said alone", () => {
    const review = {
      version: 1 as const,
      target: "main...HEAD",
      findings: [
        {
          file: "a.ts",
          start_line: 2,
          end_line: 4,
          severity: "warning" as const,
          title: "Unchecked result",
          explanation: "The error is dropped.",
        },
      ],
      dropped: 1,
      truncated: false,
      notes: ["Dropped a finding: b.ts is not in the diff"],
    };
    expect(threadReviewText(review)).toBe(
      [
        "Dropped a finding: b.ts is not in the diff",
        "a.ts:2-4 warning: Unchecked result",
        "  The error is dropped.",
        "1 finding (1 warning) in main...HEAD; 1 dropped (not on the diff's lines, or not well formed).",
      ].join("\n"),
    );
    const nothing = "Nothing to review: no changed lines in uncommitted changes.";
    expect(
      threadReviewText({
        ...review,
        findings: [],
        dropped: 0,
        target: "uncommitted changes",
        notes: [nothing],
      }),
    ).toBe(nothing);
  });
});
