import type { ThreadReview } from "../../client-core/host-client.js";
import { lineRange } from "../../client-core/review-text.js";

/** What `/review` shows above the composer: its latest step while it runs, then the findings. */
export type ReviewShown =
  | { status: "running"; step: string | null }
  | { status: "done"; review: ThreadReview };

const SEVERITY_BADGE = { error: "badge-rejected", warning: "badge-queued", note: "" } as const;

/** `/review`'s findings, each by file and lines, severity, title and explanation, until closed. */
export function ReviewPanel({ shown, onClose }: { shown: ReviewShown; onClose: () => void }) {
  const findings = shown.status === "done" ? shown.review.findings : [];
  const title =
    shown.status === "running"
      ? "Reviewing (read-only)…"
      : `Review of ${shown.review.target} (${findings.length} finding${findings.length === 1 ? "" : "s"})`;
  return (
    <section class="catalog-panel review-panel" aria-label="Review" aria-busy={shown.status === "running"}>
      <div class="catalog-head">
        <h2>{title}</h2>
        <button type="button" class="icon-button" aria-label="Close review" onClick={onClose}>
          ×
        </button>
      </div>
      {shown.status === "running" && shown.step ? <p class="catalog-meta">{shown.step}</p> : null}
      {shown.status === "done" ? (
        <>
          {shown.review.notes.length > 0 ? (
            <p class="catalog-meta review-notes">{shown.review.notes.join("\n")}</p>
          ) : null}
          {findings.length === 0 && shown.review.notes.length === 0 ? (
            <p class="catalog-empty">No findings in {shown.review.target}.</p>
          ) : null}
          <ul>
            {findings.map((finding) => (
              <li key={`${finding.file}:${finding.start_line}:${finding.title}`}>
                <code class="catalog-name">
                  {finding.file}:{lineRange(finding)}
                </code>{" "}
                <span class={`badge ${SEVERITY_BADGE[finding.severity]}`}>{finding.severity}</span>{" "}
                <strong>{finding.title}</strong>
                <p>{finding.explanation}</p>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}
