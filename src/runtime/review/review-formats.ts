import { reviewText } from "../../client-core/review-text.js";
import type { Finding, ReviewReport, Severity } from "./review-findings.js";

export { reviewText };

export const REVIEW_FORMATS = ["text", "json", "sarif"] as const;
export type ReviewFormat = (typeof REVIEW_FORMATS)[number];

/** The report in `format`, ending with a newline. `toolVersion` goes into SARIF's driver. */
export function formatReview(report: ReviewReport, format: ReviewFormat, toolVersion: string): string {
  if (format === "json") return `${JSON.stringify(report, null, 2)}\n`;
  if (format === "sarif") return `${JSON.stringify(sarifLog(report, toolVersion), null, 2)}\n`;
  return reviewText(report);
}

/**
 * SARIF 2.1.0, as GitHub code scanning reads it: one run by the `spark` driver, a rule per
 * severity and title, results located by a path relative to the repository root.
 */
export function sarifLog(report: ReviewReport, toolVersion: string) {
  const rules: Array<{
    id: string;
    name: string;
    shortDescription: { text: string };
    defaultConfiguration: { level: Severity };
  }> = [];
  const ruleIndex = new Map<string, number>();
  const results = report.findings.map((finding) => {
    const id = ruleId(finding);
    let index = ruleIndex.get(id);
    if (index === undefined) {
      index = rules.length;
      ruleIndex.set(id, index);
      rules.push({
        id,
        name: finding.title,
        shortDescription: { text: finding.title },
        defaultConfiguration: { level: finding.severity },
      });
    }
    return {
      ruleId: id,
      ruleIndex: index,
      level: finding.severity,
      message: { text: `${finding.title}: ${finding.explanation}` },
      locations: [
        {
          physicalLocation: {
            artifactLocation: { uri: fileUri(finding.file) },
            region: { startLine: finding.start_line, endLine: finding.end_line },
          },
        },
      ],
    };
  });
  return {
    $schema: "https://json.schemastore.org/sarif-2.1.0.json",
    version: "2.1.0" as const,
    runs: [
      {
        tool: {
          driver: {
            name: "spark",
            version: toolVersion,
            rules,
          },
        },
        results,
      },
    ],
  };
}

/** `spark/error/off-by-one-in-loop-bound`: the same title and severity share a rule. */
function ruleId(finding: Finding): string {
  const slug = finding.title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "")
    .slice(0, 60);
  return `spark/${finding.severity}/${slug || "finding"}`;
}

/** A relative URI reference for a repository path: each segment percent-encoded. */
function fileUri(path: string): string {
  return path.split("/").map(encodeURIComponent).join("/");
}
