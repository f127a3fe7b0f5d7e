import type { PatchPreviewFile, PatchPreviewHunk } from "../../client-core/streaming-patch.js";
import type { FileState } from "../../client-core/thread-view.js";
import type { DiffHunk, DiffLine, FileDiff } from "../../protocol/agent.js";

export type DiffMode = "unified" | "split";

/**
 * A hunk of an applied patch, numbered, or of a patch the model is still writing: its `@@` lines
 * as written and no line numbers yet.
 */
type ShownHunk = DiffHunk | PatchPreviewHunk;

export interface DiffViewProps {
  itemId: string;
  /** An applied patch's files, or those of a patch being written (a preview). */
  files: readonly (FileDiff | PatchPreviewFile)[];
  states: Record<string, FileState>;
  mode: DiffMode;
  /** Whether the files can still be accepted or rejected (the patch was applied). */
  reviewable: boolean;
  onResolve(path: string, accept: boolean): void;
}

const STATE_LABEL: Record<FileState, string> = {
  accepted: "Accepted",
  rejected: "Rejected",
  undone: "Undone",
  "partly accepted": "Partly accepted",
};

/** The files of one patch, each with its hunks and per-file Accept / Reject. */
export function DiffView({ itemId, files, states, mode, reviewable, onResolve }: DiffViewProps) {
  return (
    <div class="diff">
      {files.map((file) => {
        const state = states[file.path];
        return (
          <section class={`diff-file${state ? ` is-${state}` : ""}`} key={file.path} data-path={file.path}>
            <header class="diff-file-header">
              <span class="diff-path">
                {file.kind === "move" ? `${file.from} → ${file.path}` : file.path}
                {file.kind === "add" ? " (new file)" : file.kind === "delete" ? " (deleted)" : ""}
              </span>
              <span class="diff-counts">
                <span class="count-add">+{file.added}</span> <span class="count-remove">-{file.removed}</span>
              </span>
              {state ? (
                <span class={`badge badge-${state}`}>{STATE_LABEL[state]}</span>
              ) : reviewable ? (
                <span class="diff-actions">
                  <button
                    type="button"
                    class="button small accept"
                    aria-label={`Accept ${file.path}`}
                    onClick={() => onResolve(file.path, true)}
                  >
                    Accept
                  </button>
                  <button
                    type="button"
                    class="button small reject"
                    aria-label={`Reject ${file.path} (restore it)`}
                    title="Restore this file as it was before the patch"
                    onClick={() => onResolve(file.path, false)}
                  >
                    Reject
                  </button>
                </span>
              ) : null}
            </header>
            <div class="diff-body" data-item-id={itemId}>
              {file.hunks.map((hunk: ShownHunk, index) => {
                const key = "header" in hunk ? index : `${hunk.oldStart},${hunk.newStart}`;
                return mode === "split" ? (
                  <SplitHunk key={key} hunk={hunk} />
                ) : (
                  <UnifiedHunk key={key} hunk={hunk} />
                );
              })}
            </div>
          </section>
        );
      })}
    </div>
  );
}

function hunkHeader(hunk: ShownHunk): string {
  if ("header" in hunk) return hunk.header;
  return `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
}

const SIGN: Record<DiffLine["kind"], string> = { context: " ", add: "+", remove: "-" };

function UnifiedHunk({ hunk }: { hunk: ShownHunk }) {
  const numbered = !("header" in hunk);
  let oldNo = numbered ? hunk.oldStart : 0;
  let newNo = numbered ? hunk.newStart : 0;
  return (
    <table class="diff-table unified">
      <tbody>
        <tr class="diff-hunk">
          <td colSpan={4}>{hunkHeader(hunk)}</td>
        </tr>
        {hunk.lines.map((line, index) => {
          const left = line.kind === "add" || !numbered ? "" : String(oldNo++);
          const right = line.kind === "remove" || !numbered ? "" : String(newNo++);
          return (
            <tr key={numbered ? `${left}:${right}` : index} class={`line-${line.kind}`}>
              <td class="line-no">{left}</td>
              <td class="line-no">{right}</td>
              <td class="line-sign">{SIGN[line.kind]}</td>
              <td class="line-text">{line.text}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

interface Side {
  /** Null while the patch is still being written (its line numbers are not known). */
  no: number | null;
  line: DiffLine;
}

/** Pairs each run of removed lines with the added lines that follow it, row by row. */
export function splitRows(hunk: ShownHunk): [Side | null, Side | null][] {
  const rows: [Side | null, Side | null][] = [];
  const numbered = !("header" in hunk);
  let oldNo = numbered ? hunk.oldStart : 0;
  let newNo = numbered ? hunk.newStart : 0;
  const number = (next: number) => (numbered ? next : null);
  let removed: Side[] = [];
  let added: Side[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++)
      rows.push([removed[i] ?? null, added[i] ?? null]);
    removed = [];
    added = [];
  };
  for (const line of hunk.lines) {
    if (line.kind === "remove") {
      if (added.length > 0) flush();
      removed.push({ no: number(oldNo++), line });
    } else if (line.kind === "add") added.push({ no: number(newNo++), line });
    else {
      flush();
      rows.push([
        { no: number(oldNo++), line },
        { no: number(newNo++), line },
      ]);
    }
  }
  flush();
  return rows;
}

function SplitHunk({ hunk }: { hunk: ShownHunk }) {
  const cell = (side: Side | null, at: "l" | "r") =>
    side
      ? [
          <td key={`${at}n`} class={`line-no line-${side.line.kind}`}>
            {side.no}
          </td>,
          <td key={`${at}t`} class={`line-text line-${side.line.kind}`}>
            {side.line.text}
          </td>,
        ]
      : [
          <td key={`${at}n`} class="line-no line-empty" />,
          <td key={`${at}t`} class="line-text line-empty" />,
        ];
  return (
    <table class="diff-table split">
      <tbody>
        <tr class="diff-hunk">
          <td colSpan={4}>{hunkHeader(hunk)}</td>
        </tr>
        {splitRows(hunk).map(([left, right], index) => (
          <tr key={"header" in hunk ? index : `${left?.no ?? ""}:${right?.no ?? ""}`}>
            {cell(left, "l")}
            {cell(right, "r")}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
