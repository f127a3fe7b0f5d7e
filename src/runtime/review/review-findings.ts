import { z } from "zod";
import type { ReviewFinding, ReviewReport } from "../../protocol/agent.js";
import { type DiffFile, inDiff } from "./diff-hunks.js";

export const SEVERITIES = ["error", "warning", "note"] as const;
export type Severity = (typeof SEVERITIES)[number];

/** One problem a review found, on lines of the diff's new side (the wire's shape). */
export type Finding = ReviewFinding;

/** Findings one answer may hold, and the lengths of their fields (what a small model can write in one reply). */
export const FINDING_LIMITS = { findings: 8, file: 200, title: 100, explanation: 400 } as const;

const findingProperties = {
  file: {
    type: "string",
    minLength: 1,
    maxLength: FINDING_LIMITS.file,
    description: "path relative to the repository root, as in the diff",
  },
  start_line: { type: "integer", minimum: 1, description: "first line, on the new side of the diff" },
  end_line: { type: "integer", minimum: 1, description: "last line (start_line for one line)" },
  severity: { enum: [...SEVERITIES] },
  title: { type: "string", minLength: 1, maxLength: FINDING_LIMITS.title },
  explanation: { type: "string", minLength: 1, maxLength: FINDING_LIMITS.explanation },
} as const;

const FINDING_KEYS = ["file", "start_line", "end_line", "severity", "title", "explanation"] as const;

/**
 * The JSON Schema the reviewing model answers under (`text.format`; on the embedded engine a
 * grammar enforces it): `{findings: [{file, start_line, end_line, severity, title, explanation}]}`.
 */
export const REVIEW_ANSWER_SCHEMA = {
  type: "object",
  properties: {
    findings: {
      type: "array",
      maxItems: FINDING_LIMITS.findings,
      items: {
        type: "object",
        properties: findingProperties,
        required: [...FINDING_KEYS],
        additionalProperties: false,
      },
    },
  },
  required: ["findings"],
  additionalProperties: false,
} as const;

/**
 * The published schema of `spark review --format json` (draft-07): the findings that passed the
 * check against the diff, how many were dropped, what was reviewed. docs/review-in-ci.md shows it.
 */
export const REVIEW_REPORT_SCHEMA = {
  $schema: "http://json-schema.org/draft-07/schema#",
  title: "spark review report",
  type: "object",
  properties: {
    version: { const: 1 },
    target: {
      type: "string",
      description: "what was reviewed: 'uncommitted changes', 'BASE...HEAD', 'commit SHA'",
    },
    findings: {
      type: "array",
      items: {
        type: "object",
        properties: findingProperties,
        required: [...FINDING_KEYS],
        additionalProperties: false,
      },
    },
    dropped: {
      type: "integer",
      minimum: 0,
      description: "findings the model gave that were left out: not in the diff, or not well formed",
    },
    truncated: { type: "boolean", description: "the diff was longer than the model was shown" },
  },
  required: ["version", "target", "findings", "dropped", "truncated"],
  additionalProperties: false,
} as const;

export type { ReviewReport };

const findingSchema = z.strictObject({
  file: z.string().min(1).max(FINDING_LIMITS.file),
  start_line: z.number().int().min(1),
  end_line: z.number().int().min(1),
  severity: z.enum(SEVERITIES),
  title: z.string().min(1).max(FINDING_LIMITS.title),
  explanation: z.string().min(1).max(FINDING_LIMITS.explanation),
});

/** Why a finding was left out, for the person (`src/x.ts:90-95: not in the diff`). */
export type DroppedFinding = { reason: string };

/** The model's answer could not be read as findings at all. */
export class UnreadableAnswerError extends Error {
  readonly code = "unreadable_answer" as const;
}

/**
 * The findings of the model's `answer`, each checked against the diff: its file is one the diff
 * changes and its lines lie in one hunk of it (new side). A finding that fails is dropped, never
 * moved or clamped: a line the model did not mean would be worse than none. Throws
 * {@link UnreadableAnswerError} when the answer is not a JSON object with a `findings` list.
 */
export function checkFindings(
  answer: string,
  files: readonly DiffFile[],
): { findings: Finding[]; dropped: DroppedFinding[] } {
  const { listed, cut } = findingsList(answer);
  const findings: Finding[] = [];
  const dropped: DroppedFinding[] = cut
    ? [{ reason: "the answer was cut short: its last finding was not finished" }]
    : [];
  for (const [index, raw] of listed.entries()) {
    if (index >= FINDING_LIMITS.findings) {
      dropped.push({ reason: `more than ${FINDING_LIMITS.findings} findings` });
      continue;
    }
    const parsed = findingSchema.safeParse(raw);
    if (!parsed.success) {
      dropped.push({
        reason: `finding ${index + 1} is not well formed (${parsed.error.issues[0]?.path.join(".") || "shape"})`,
      });
      continue;
    }
    const finding = { ...parsed.data, file: parsed.data.file.replace(/^\.\//, "") };
    const where = `${finding.file}:${finding.start_line}-${finding.end_line}`;
    if (finding.end_line < finding.start_line) dropped.push({ reason: `${where}: ends before it starts` });
    else if (!files.some((file) => file.path === finding.file))
      dropped.push({ reason: `${where}: the diff does not change this file` });
    else if (!inDiff(files, finding.file, finding.start_line, finding.end_line))
      dropped.push({ reason: `${where}: not within the changed lines` });
    else findings.push(finding);
  }
  return { findings, dropped };
}

function findingsList(answer: string): { listed: unknown[]; cut: boolean } {
  let value: unknown;
  let cut = false;
  try {
    value = JSON.parse(answer.trim());
  } catch {
    // An answer cut at the output limit keeps the findings it finished.
    const finished = finishedFindings(answer);
    if (finished === null)
      throw new UnreadableAnswerError(`the model's answer is not JSON: ${preview(answer)}`);
    value = finished;
    cut = true;
  }
  const findings = (value as { findings?: unknown } | null)?.findings;
  if (typeof value !== "object" || value === null || !Array.isArray(findings))
    throw new UnreadableAnswerError(`the model's answer has no findings list: ${preview(answer)}`);
  return { listed: findings, cut };
}

/**
 * `{"findings": [{...}, {...}, {...` cut anywhere: the findings finished before the cut (perhaps
 * none), as `{findings: [...]}`; null when the text does not begin that way.
 */
function finishedFindings(text: string): { findings: unknown[] } | null {
  const start = /^\s*\{\s*"findings"\s*:\s*\[/.exec(text);
  if (!start) return null;
  let depth = 0;
  let inString = false;
  let lastEnd = -1;
  for (let i = start[0].length; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === "\\") i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "{" || char === "[") depth++;
    else if (char === "}" || char === "]") {
      depth--;
      if (depth === 0 && char === "}") lastEnd = i + 1;
      if (depth < 0) return null;
    }
  }
  // Cut inside the first finding: none finished.
  if (lastEnd < 0) return { findings: [] };
  try {
    return JSON.parse(`${text.slice(0, lastEnd)}]}`) as { findings: unknown[] };
  } catch {
    return null;
  }
}

function preview(text: string): string {
  const flat = text.trim().replace(/\s+/g, " ");
  return JSON.stringify(flat.length > 120 ? `${flat.slice(0, 120)}...` : flat);
}
