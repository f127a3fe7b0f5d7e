import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ThreadReview } from "../../../src/client-core/host-client.js";
import { REVIEW_USAGE } from "../../../src/client-core/review-text.js";
import type { ReviewFinding } from "../../../src/protocol/agent.js";
import {
  checkFinding,
  fileInRoot,
  REVIEW_SOURCE,
  reviewCommand,
  reviewOutcome,
  reviewRoot,
} from "./review-problems.js";

const root = path.resolve("/work/repo");

function finding(overrides: Partial<Record<keyof ReviewFinding, unknown>> = {}): ReviewFinding {
  return {
    file: "src/a.ts",
    start_line: 3,
    end_line: 5,
    severity: "warning",
    title: "Off by one",
    explanation: "The loop stops one short.",
    ...overrides,
  } as ReviewFinding;
}

function review(findings: unknown[], extra: Partial<ThreadReview> = {}): ThreadReview {
  return {
    version: 1,
    target: "uncommitted changes",
    findings: findings as ReviewFinding[],
    dropped: 0,
    truncated: false,
    notes: [],
    ...extra,
  };
}

describe("/review typed in the VS Code chat", () => {
  it("is told from other messages, and its arguments give the host's target", () => {
    expect(reviewCommand("explain this")).toBeNull();
    expect(reviewCommand("/reviewer please")).toBeNull();
    expect(reviewCommand("please /review")).toBeNull();
    expect(reviewCommand("/compact")).toBeNull();
    expect(reviewCommand("/review")).toEqual({ kind: "uncommitted" });
    expect(reviewCommand("  /review  ")).toEqual({ kind: "uncommitted" });
    expect(reviewCommand("/review --uncommitted")).toEqual({ kind: "uncommitted" });
    expect(reviewCommand("/REVIEW --base origin/main")).toEqual({ kind: "base", base: "origin/main" });
    expect(reviewCommand("/review --commit 1a2b3c4")).toEqual({ kind: "commit", sha: "1a2b3c4" });
  });

  it.each([
    "/review --bogus",
    "/review main",
    "/review --base",
    "/review --base --output=x",
    "/review --commit -n",
    "/review --base main --commit 1a2b3c4",
  ])("refuses %j with the usage, before anything is sent", (input) => {
    expect(() => reviewCommand(input)).toThrow(REVIEW_USAGE);
  });
});

describe("where a review's paths lie", () => {
  it("is the git repository around the workspace (a worktree's .git file too), else the workspace", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-review-root-"));
    try {
      const workspace = path.join(dir, "repo", "packages", "app");
      await mkdir(workspace, { recursive: true });
      expect(reviewRoot(workspace)).toBe(workspace);
      await writeFile(path.join(dir, "repo", ".git"), "gitdir: /elsewhere/.git/worktrees/repo\n");
      expect(reviewRoot(workspace)).toBe(path.join(dir, "repo"));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(reviewRoot("/a/b/c", (candidate) => candidate === path.resolve("/a"))).toBe(path.resolve("/a"));
    expect(reviewRoot("/a/b/c", () => false)).toBe(path.resolve("/a/b/c"));
  });

  it("keeps a finding's file inside the root and refuses one that escapes it", () => {
    expect(fileInRoot(root, "src/a.ts")).toBe(path.join(root, "src", "a.ts"));
    expect(fileInRoot(root, "src/../b.ts")).toBe(path.join(root, "b.ts"));
    expect(fileInRoot(root, "../other/a.ts")).toBeNull();
    expect(fileInRoot(root, "src/../../a.ts")).toBeNull();
    expect(fileInRoot(root, "..")).toBeNull();
    expect(fileInRoot(root, "/etc/passwd")).toBeNull();
    expect(fileInRoot(root, ".")).toBeNull();
    expect(fileInRoot(root, "src/a\0.ts")).toBeNull();
  });

  it("never resolves any path outside the root (property)", () => {
    const segment = fc.constantFrom("..", ".", "a", "b.ts", "", "/", "\0", "..a");
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 8 }), fc.boolean(), (segments, absolute) => {
        const file = (absolute ? "/" : "") + segments.join("/");
        const resolved = fileInRoot(root, file);
        if (resolved !== null) expect(resolved.startsWith(root + path.sep)).toBe(true);
      }),
    );
  });
});

describe("a finding from the host", () => {
  it("is taken when all six fields are well formed", () => {
    expect(checkFinding(finding())).toEqual(finding());
    expect(checkFinding(finding({ start_line: 7, end_line: 7 }))).toEqual(
      finding({ start_line: 7, end_line: 7 }),
    );
  });

  it.each([
    ["not an object", "src/a.ts:3"],
    ["not an object", null],
    ["not an object", [finding()]],
    ["file", finding({ file: "" })],
    ["file", finding({ file: 7 })],
    ["start_line", finding({ start_line: 0 })],
    ["start_line", finding({ start_line: 2.5 })],
    ["start_line", finding({ start_line: "3" })],
    ["end_line", finding({ start_line: 5, end_line: 3 })],
    ["end_line", finding({ end_line: undefined })],
    ["severity", finding({ severity: "info" })],
    ["title", finding({ title: "" })],
    ["explanation", finding({ explanation: "x".repeat(10_001) })],
  ])("is refused when its %s is wrong", (reason, raw) => {
    expect(checkFinding(raw)).toBe(reason);
  });
});

describe("a review's findings in the chat and in Problems", () => {
  it("become diagnostics: lines 0-based, severities mapped, title and explanation, source Spark review", () => {
    const outcome = reviewOutcome(
      review([
        finding(),
        finding({
          file: "lib/b.ts",
          start_line: 1,
          end_line: 1,
          severity: "error",
          title: "Null",
          explanation: "x may be null.",
        }),
        finding({
          file: "lib/b.ts",
          start_line: 9,
          end_line: 12,
          severity: "note",
          title: "Name",
          explanation: "Clearer.",
        }),
      ]),
      root,
    );
    expect(outcome.diagnostics).toEqual([
      {
        file: path.join(root, "src/a.ts"),
        startLine: 2,
        endLine: 4,
        severity: "warning",
        message: "Off by one\nThe loop stops one short.",
        source: REVIEW_SOURCE,
      },
      {
        file: path.join(root, "lib/b.ts"),
        startLine: 0,
        endLine: 0,
        severity: "error",
        message: "Null\nx may be null.",
        source: REVIEW_SOURCE,
      },
      {
        file: path.join(root, "lib/b.ts"),
        startLine: 8,
        endLine: 11,
        severity: "information",
        message: "Name\nClearer.",
        source: REVIEW_SOURCE,
      },
    ]);
    expect(outcome.notices).toEqual([
      { text: "src/a.ts:3-5 warning: Off by one — The loop stops one short.", tone: "warn" },
      { text: "lib/b.ts:1 error: Null — x may be null.", tone: "error" },
      { text: "lib/b.ts:9-12 note: Name — Clearer.", tone: "info" },
      { text: "3 findings (1 error, 1 warning, 1 note) in uncommitted changes.", tone: "info" },
      { text: "In Problems (source: Spark review): 3.", tone: "dim" },
    ]);
  });

  it("drops a finding outside the workspace from Problems and says so in the chat", () => {
    const outcome = reviewOutcome(
      review([finding({ file: "../../etc/passwd" }), finding({ file: "/etc/hosts" }), finding()]),
      root,
    );
    expect(outcome.diagnostics.map((diagnostic) => diagnostic.file)).toEqual([path.join(root, "src/a.ts")]);
    const warnings = outcome.notices.filter(
      (notice) => notice.tone === "warn" && notice.text.includes("outside"),
    );
    expect(warnings.map((notice) => notice.text)).toEqual([
      `../../etc/passwd: outside ${root}, not in Problems`,
      `/etc/hosts: outside ${root}, not in Problems`,
    ]);
  });

  it("leaves a malformed finding out of both, and names it", () => {
    const outcome = reviewOutcome(review([finding({ end_line: 0 }), "oops", finding()]), root);
    expect(outcome.diagnostics).toHaveLength(1);
    const texts = outcome.notices.map((notice) => notice.text);
    expect(texts).toContain("finding 1 is not well formed (end_line): not shown");
    expect(texts).toContain("finding 2 is not well formed (not an object): not shown");
    expect(texts).toContain("1 finding (1 warning) in uncommitted changes.");
  });

  it("clears Problems when the review finds nothing, and shows the host's notes", () => {
    const none = reviewOutcome(
      review([], { notes: ["dropped: src/x.ts:90: not in the diff"], dropped: 1 }),
      root,
    );
    expect(none.diagnostics).toEqual([]);
    expect(none.notices).toEqual([
      { text: "dropped: src/x.ts:90: not in the diff", tone: "dim" },
      {
        text: "No findings in uncommitted changes; 1 dropped (not on the diff's lines, or not well formed).",
        tone: "info",
      },
    ]);
    const nothing = reviewOutcome(
      review([], { notes: ["Nothing to review: no uncommitted changes."] }),
      root,
    );
    expect(nothing).toEqual({
      notices: [{ text: "Nothing to review: no uncommitted changes.", tone: "info" }],
      diagnostics: [],
    });
  });

  it("puts nothing in Problems without a workspace folder, and says why", () => {
    const outcome = reviewOutcome(review([finding()]), null);
    expect(outcome.diagnostics).toEqual([]);
    expect(outcome.notices.map((notice) => notice.text)).toContain(
      "src/a.ts: no workspace folder to show it in, not in Problems",
    );
  });

  it("never throws on what a host sends, and every diagnostic lies in the root on lines from 0 (property)", () => {
    const anyFinding = fc.oneof(
      fc.anything(),
      fc.record({
        file: fc.oneof(fc.constantFrom("src/a.ts", "../a.ts", "/abs.ts", "a/../../b", ""), fc.string()),
        start_line: fc.oneof(fc.integer({ min: -2, max: 50 }), fc.double()),
        end_line: fc.oneof(fc.integer({ min: -2, max: 50 }), fc.constant("3")),
        severity: fc.constantFrom("error", "warning", "note", "fatal"),
        title: fc.string({ maxLength: 5 }),
        explanation: fc.string({ maxLength: 5 }),
      }),
    );
    fc.assert(
      fc.property(fc.array(anyFinding, { maxLength: 6 }), fc.anything(), (findings, notes) => {
        const outcome = reviewOutcome(review(findings, { notes: notes as string[] }), root);
        for (const diagnostic of outcome.diagnostics) {
          expect(diagnostic.file.startsWith(root + path.sep)).toBe(true);
          expect(diagnostic.startLine).toBeGreaterThanOrEqual(0);
          expect(diagnostic.endLine).toBeGreaterThanOrEqual(diagnostic.startLine);
        }
        expect(outcome.notices.every((notice) => typeof notice.text === "string")).toBe(true);
      }),
    );
  });
});
