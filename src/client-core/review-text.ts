import type { ReviewFinding, ReviewReport, ReviewTarget } from "../protocol/agent.js";
import { gitRefSchema } from "../protocol/agent-requests.js";
import type { ThreadReview } from "./host-client.js";

/** How `/review` is used, in every face. */
export const REVIEW_USAGE = "/review [--uncommitted | --base BRANCH | --commit SHA]";

/**
 * The target of `/review ARGS` (`--uncommitted`, `--base BRANCH`, `--commit SHA`; none: the
 * uncommitted changes). Anything else, or a branch the host would refuse, throws with the usage.
 */
export function parseReviewArgs(args: string): ReviewTarget {
  const words = args.split(/\s+/).filter(Boolean);
  const given: ReviewTarget[] = [];
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const value = words[i + 1];
    if (word === "--uncommitted") given.push({ kind: "uncommitted" });
    else if ((word === "--base" || word === "--commit") && value !== undefined) {
      i++;
      if (!gitRefSchema.safeParse(value).success)
        throw new Error(`'${value}' is not a branch, tag or commit. Usage: ${REVIEW_USAGE}`);
      given.push(word === "--base" ? { kind: "base", base: value } : { kind: "commit", sha: value });
    } else throw new Error(`Usage: ${REVIEW_USAGE} ('${word}' is not one of these).`);
  }
  if (given.length > 1) throw new Error(`Give one change to review. Usage: ${REVIEW_USAGE}`);
  return given[0] ?? { kind: "uncommitted" };
}

/** For a person: each finding as `file:start-end severity: title` and its explanation, then a summary. */
export function reviewText(report: ReviewReport): string {
  const lines: string[] = [];
  for (const finding of report.findings) {
    lines.push(`${finding.file}:${lineRange(finding)} ${finding.severity}: ${finding.title}`);
    for (const line of finding.explanation.split("\n")) lines.push(`  ${line}`);
  }
  lines.push(summary(report));
  return `${lines.join("\n")}\n`;
}

/** A `thread.review` answer as a face shows it in text: its notes first, then {@link reviewText}. */
export function threadReviewText(review: ThreadReview): string {
  const nothing =
    review.findings.length === 0 && review.notes.some((note) => note.startsWith("Nothing to review"));
  if (nothing) return review.notes.join("\n");
  return [...review.notes, reviewText(review).trimEnd()].join("\n");
}

/** `12` or `12-14`. */
export function lineRange(finding: Pick<ReviewFinding, "start_line" | "end_line">): string {
  return finding.start_line === finding.end_line
    ? String(finding.start_line)
    : `${finding.start_line}-${finding.end_line}`;
}

function summary(report: ReviewReport): string {
  const counts = (["error", "warning", "note"] as const)
    .map((severity) => [severity, report.findings.filter((f) => f.severity === severity).length] as const)
    .filter(([, n]) => n > 0)
    .map(([severity, n]) => `${n} ${severity}${n === 1 ? "" : "s"}`);
  const found =
    report.findings.length === 0
      ? `No findings in ${report.target}`
      : `${report.findings.length} finding${report.findings.length === 1 ? "" : "s"} (${counts.join(", ")}) in ${report.target}`;
  const dropped =
    report.dropped > 0 ? `; ${report.dropped} dropped (not on the diff's lines, or not well formed)` : "";
  const cut = report.truncated ? "; the diff was cut to fit, later files were not reviewed" : "";
  return `${found}${dropped}${cut}.`;
}

/**
 * `/review ARGS` in a face: the host's review of the thread's workspace (`thread.review`), as text
 * ({@link threadReviewText}). Bad arguments throw before anything is sent.
 */
export async function slashReview(
  client: {
    review: (
      threadId: string,
      target: ReviewTarget,
      onProgress: (message: string) => void,
    ) => Promise<ThreadReview>;
  },
  threadId: string,
  args: string,
  onProgress: (message: string) => void = () => {},
): Promise<string> {
  const target = parseReviewArgs(args);
  return threadReviewText(await client.review(threadId, target, onProgress));
}
