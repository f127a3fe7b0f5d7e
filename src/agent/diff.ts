import { diffArrays } from "diff";
import type { DiffHunk, DiffLine, FileDiff } from "../protocol/agent.js";
import { splitLines, type TextLine } from "../protocol/text-lines.js";

export type { DiffHunk, DiffLine, FileDiff };

/** Lines of unchanged context around each change. */
const CONTEXT = 3;
/** Beyond this many differing lines the middle of the files is shown replaced wholesale. */
const MAX_EDIT_DISTANCE = 2000;

type Edit = "=" | "-" | "+";

/** A line diff of two texts (null: the file does not exist on that side). */
export function diffText(path: string, before: string | null, after: string | null): FileDiff {
  const oldLines = splitLines(before ?? "");
  const newLines = splitLines(after ?? "");
  const edits = editScript(oldLines, newLines);
  let added = 0;
  let removed = 0;
  for (const edit of edits) {
    if (edit === "+") added++;
    else if (edit === "-") removed++;
  }
  const kind = before === null ? "add" : after === null ? "delete" : "update";
  return { path, kind, hunks: hunksOf(edits, oldLines, newLines), added, removed };
}

/** Standard unified diff text (`---`/`+++` headers, `@@ -a,b +c,d @@` hunks). */
export function formatUnifiedDiff(diff: FileDiff): string {
  const from = diff.kind === "add" ? "/dev/null" : `a/${diff.from ?? diff.path}`;
  const to = diff.kind === "delete" ? "/dev/null" : `b/${diff.path}`;
  const out = [`--- ${from}`, `+++ ${to}`];
  for (const hunk of diff.hunks) {
    out.push(`@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`);
    for (const line of hunk.lines) {
      out.push(`${line.kind === "add" ? "+" : line.kind === "remove" ? "-" : " "}${line.text}`);
      if (line.noNewline) out.push("\\ No newline at end of file");
    }
  }
  return `${out.join("\n")}\n`;
}

/** The edits turning `a` into `b`: common prefix and suffix, and jsdiff's shortest script between. */
function editScript(a: readonly TextLine[], b: readonly TextLine[]): Edit[] {
  // Line endings are part of a line's identity: a file converted to CRLF shows every line changed.
  const ids = new Map<string, number>();
  const intern = (line: TextLine) => {
    const key = line.text + line.eol;
    let id = ids.get(key);
    if (id === undefined) {
      id = ids.size;
      ids.set(key, id);
    }
    return id;
  };
  const x = a.map(intern);
  const y = b.map(intern);
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) {
    endX--;
    endY--;
  }
  const midX = x.slice(start, endX);
  const midY = y.slice(start, endY);
  const changes = diffArrays(midX, midY, { maxEditLength: MAX_EDIT_DISTANCE });
  const middle: Edit[] = changes
    ? changes.flatMap((change) =>
        new Array<Edit>(change.count).fill(change.added ? "+" : change.removed ? "-" : "="),
      )
    : [...new Array<Edit>(midX.length).fill("-"), ...new Array<Edit>(midY.length).fill("+")];
  return [...new Array<Edit>(start).fill("="), ...middle, ...new Array<Edit>(x.length - endX).fill("=")];
}

function hunksOf(edits: readonly Edit[], a: readonly TextLine[], b: readonly TextLine[]): DiffHunk[] {
  // Spans of edit indices holding changes, merged where less than 2 * CONTEXT equal lines part them.
  const spans: [number, number][] = [];
  for (let i = 0; i < edits.length; i++) {
    if (edits[i] === "=") continue;
    let end = i;
    while (end < edits.length && edits[end] !== "=") end++;
    const last = spans.at(-1);
    if (last && i - last[1] <= 2 * CONTEXT) last[1] = end;
    else spans.push([i, end]);
    i = end;
  }
  const hunks: DiffHunk[] = [];
  let edit = 0;
  let ai = 0;
  let bi = 0;
  for (const [spanStart, spanEnd] of spans) {
    const from = Math.max(edit, spanStart - CONTEXT);
    const to = Math.min(edits.length, spanEnd + CONTEXT);
    for (; edit < from; edit++) {
      if (edits[edit] !== "+") ai++;
      if (edits[edit] !== "-") bi++;
    }
    const oldStart = ai;
    const newStart = bi;
    const lines: DiffLine[] = [];
    for (; edit < to; edit++) {
      const kind = edits[edit]!;
      const line = kind === "+" ? b[bi]! : a[ai]!;
      const diffLine: DiffLine = {
        kind: kind === "=" ? "context" : kind === "+" ? "add" : "remove",
        text: line.text,
      };
      if (line.eol === "") diffLine.noNewline = true;
      lines.push(diffLine);
      if (kind !== "+") ai++;
      if (kind !== "-") bi++;
    }
    const oldLines = ai - oldStart;
    const newLines = bi - newStart;
    hunks.push({
      oldStart: oldLines === 0 ? oldStart : oldStart + 1,
      oldLines,
      newStart: newLines === 0 ? newStart : newStart + 1,
      newLines,
      lines,
    });
  }
  return hunks;
}
