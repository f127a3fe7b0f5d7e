import type { SessionDiff } from "../../protocol/agent.js";
import { type DiffMode, DiffView } from "./diff-view.js";

/** What `/diff` shows above the composer, until closed: each file the session changed, as a diff. */
export function SessionDiffPanel({
  diff,
  mode,
  onClose,
}: {
  diff: SessionDiff;
  mode: DiffMode;
  onClose: () => void;
}) {
  const count = diff.files.length + diff.omitted.length;
  const added = diff.files.reduce((sum, file) => sum + file.added, 0);
  const removed = diff.files.reduce((sum, file) => sum + file.removed, 0);
  return (
    <section class="catalog-panel session-diff" aria-label="Session changes">
      <div class="catalog-head">
        <h2>
          Session changes ({count} file{count === 1 ? "" : "s"}, +{added} −{removed})
        </h2>
        <button type="button" class="icon-button" aria-label="Close session changes" onClick={onClose}>
          ×
        </button>
      </div>
      {count === 0 ? <p class="catalog-empty">No changes in this session yet.</p> : null}
      {diff.files.length > 0 ? (
        <DiffView
          itemId="session"
          files={diff.files}
          states={{}}
          mode={mode}
          reviewable={false}
          onResolve={() => {}}
        />
      ) : null}
      {diff.omitted.length > 0 ? (
        <p class="catalog-meta">Not shown (too big, binary or over the bound): {diff.omitted.join(", ")}</p>
      ) : null}
      {diff.notes.map((note) => (
        <p class="catalog-meta" key={note}>
          {note}
        </p>
      ))}
    </section>
  );
}
