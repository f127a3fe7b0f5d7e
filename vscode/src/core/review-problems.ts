import { existsSync } from "node:fs";
import path from "node:path";
import type { ThreadReview } from "../../../src/client-core/host-client.js";
import { lineRange, parseReviewArgs, reviewText } from "../../../src/client-core/review-text.js";
import type { Tone } from "../../../src/client-core/thread-view.js";
import type { ReviewFinding, ReviewTarget } from "../../../src/protocol/agent.js";

/** What VS Code's Problems panel names as the diagnostics' source. */
export const REVIEW_SOURCE = "Spark review";

/**
 * What a finding from the host may hold. The host's own bounds are tighter (8 findings an answer,
 * 200-character paths); these only keep a host that sends nonsense from filling the editor.
 */
export const REVIEW_LIMITS = {
  findings: 500,
  file: 1_000,
  title: 1_000,
  explanation: 10_000,
  line: 10_000_000,
};

/** One finding as a VS Code diagnostic: `file` absolute, lines 0-based (the finding's are 1-based). */
export interface ReviewDiagnostic {
  file: string;
  startLine: number;
  endLine: number;
  severity: "error" | "warning" | "information";
  message: string;
  source: string;
}

/** A line for the chat: the face shows each as a notice. */
export interface ReviewNotice {
  text: string;
  tone: Tone;
}

/** What the extension shows of one `thread.review` answer: notices in the chat, diagnostics in Problems. */
export interface ReviewOutcome {
  notices: ReviewNotice[];
  /** Replaces the previous review's diagnostics; none clears them. */
  diagnostics: ReviewDiagnostic[];
}

/**
 * The target of `/review ARGS` typed in the chat, or null for any other message. Arguments the
 * terminal and the web app refuse throw here too, with the usage, before anything is sent.
 */
export function reviewCommand(input: string): ReviewTarget | null {
  const match = /^\/review(?:\s+([\s\S]*))?$/i.exec(input.trim());
  if (!match) return null;
  return parseReviewArgs(match[1] ?? "");
}

/**
 * The folder a review's paths are relative to: the git repository holding `cwd` (the nearest
 * folder up with a `.git`, a worktree's file included), else `cwd` itself.
 */
export function reviewRoot(cwd: string, hasGit: (dir: string) => boolean = gitIn): string {
  const start = path.resolve(cwd);
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (hasGit(dir)) return dir;
    if (path.dirname(dir) === dir) return start;
  }
}

function gitIn(dir: string): boolean {
  return existsSync(path.join(dir, ".git"));
}

/**
 * `file` (relative, as a finding names it) resolved in `root`, or null when it is absolute, names
 * `root` itself or leaves it (`..`): a finding must not put a problem on a file outside the review.
 */
export function fileInRoot(root: string, file: string): string | null {
  if (file.includes("\0") || path.isAbsolute(file)) return null;
  const resolved = path.resolve(root, file);
  const relative = path.relative(root, resolved);
  if (relative === "" || path.isAbsolute(relative)) return null;
  if (relative === ".." || relative.startsWith(`..${path.sep}`)) return null;
  return resolved;
}

/**
 * The finding `raw` (from the host, so unchecked) if it is well formed, else why not: the six
 * fields with their types, lines from 1 with `start_line <= end_line`, strings within
 * {@link REVIEW_LIMITS}.
 */
export function checkFinding(raw: unknown): ReviewFinding | string {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return "not an object";
  const finding = raw as Record<string, unknown>;
  const { file, start_line, end_line, severity, title, explanation } = finding;
  const text = (value: unknown, max: number) =>
    typeof value === "string" && value.length > 0 && value.length <= max;
  const line = (value: unknown): value is number =>
    typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= REVIEW_LIMITS.line;
  if (!text(file, REVIEW_LIMITS.file)) return "file";
  if (!line(start_line)) return "start_line";
  if (!line(end_line) || end_line < start_line) return "end_line";
  if (severity !== "error" && severity !== "warning" && severity !== "note") return "severity";
  if (!text(title, REVIEW_LIMITS.title)) return "title";
  if (!text(explanation, REVIEW_LIMITS.explanation)) return "explanation";
  return finding as unknown as ReviewFinding;
}

const DIAGNOSTIC_SEVERITY = { error: "error", warning: "warning", note: "information" } as const;
const NOTICE_TONE = { error: "error", warning: "warn", note: "info" } as const;

/** A well-formed finding as a diagnostic on `file` (absolute). */
export function findingDiagnostic(finding: ReviewFinding, file: string): ReviewDiagnostic {
  return {
    file,
    startLine: finding.start_line - 1,
    endLine: finding.end_line - 1,
    severity: DIAGNOSTIC_SEVERITY[finding.severity],
    message: `${finding.title}\n${finding.explanation}`,
    source: REVIEW_SOURCE,
  };
}

/**
 * A `thread.review` answer as the extension shows it. The chat gets the host's notes, each
 * well-formed finding (`file:lines severity: title — explanation`) and the summary every face
 * prints; Problems gets a diagnostic per finding whose file lies in `root` ({@link reviewRoot} of
 * the session's workspace; null: none known, so no diagnostics). A finding that is not well formed,
 * or whose file is outside `root`, is left out of Problems and the chat says why.
 */
export function reviewOutcome(review: ThreadReview, root: string | null): ReviewOutcome {
  const notes = Array.isArray(review.notes) ? review.notes.filter((note) => typeof note === "string") : [];
  const raw: unknown[] = Array.isArray(review.findings) ? review.findings : [];
  const findings: ReviewFinding[] = [];
  const left: string[] = [];
  for (const [index, candidate] of raw.entries()) {
    if (index >= REVIEW_LIMITS.findings) {
      left.push(`findings past the first ${REVIEW_LIMITS.findings}: not shown`);
      break;
    }
    const checked = checkFinding(candidate);
    if (typeof checked === "string")
      left.push(`finding ${index + 1} is not well formed (${checked}): not shown`);
    else findings.push(checked);
  }
  const nothing = findings.length === 0 && notes.some((note) => note.startsWith("Nothing to review"));
  if (nothing) return { notices: notes.map((text) => ({ text, tone: "info" })), diagnostics: [] };

  const diagnostics: ReviewDiagnostic[] = [];
  for (const finding of findings) {
    const file = root === null ? null : fileInRoot(root, finding.file);
    if (file) diagnostics.push(findingDiagnostic(finding, file));
    else
      left.push(
        root === null
          ? `${finding.file}: no workspace folder to show it in, not in Problems`
          : `${finding.file}: outside ${root}, not in Problems`,
      );
  }
  const report = {
    version: 1 as const,
    target: typeof review.target === "string" ? review.target : "the changes",
    findings,
    dropped: typeof review.dropped === "number" ? review.dropped : 0,
    truncated: review.truncated === true,
  };
  const summary = reviewText(report).trimEnd().split("\n").at(-1) ?? "";
  const notices: ReviewNotice[] = [
    ...notes.map((text): ReviewNotice => ({ text, tone: "dim" })),
    ...findings.map(
      (finding): ReviewNotice => ({
        text: `${finding.file}:${lineRange(finding)} ${finding.severity}: ${finding.title} — ${finding.explanation}`,
        tone: NOTICE_TONE[finding.severity],
      }),
    ),
    { text: summary, tone: "info" },
    ...left.map((text): ReviewNotice => ({ text, tone: "warn" })),
  ];
  if (diagnostics.length > 0)
    notices.push({ text: `In Problems (source: ${REVIEW_SOURCE}): ${diagnostics.length}.`, tone: "dim" });
  return { notices, diagnostics };
}
