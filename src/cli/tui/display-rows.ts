import type { PatchPreview } from "../../client-core/streaming-patch.js";
import type { DiffLine, FileDiff, ToolDisplay } from "../../protocol/agent.js";

/** One line of a tool's display, tagged so the view can colour it. */
export type DisplayRow =
  | { kind: "file"; path: string; added: number; removed: number; label: string }
  | { kind: "hunk" | "add" | "remove" | "context" | "output" | "omitted"; text: string };

export interface DiffRowsOptions {
  /** Diff lines shown in all (hunk headers included) before the rest is summarised. Default: 400. */
  maxLines?: number;
}

/**
 * The rows of a unified diff for the terminal: a header per file (`path +N -M`), `@@` hunk
 * headers, and `+`/`-`/` ` lines. Tabs are expanded, since terminals and the layout engine disagree
 * on their width.
 */
export function diffRows(files: readonly FileDiff[], options: DiffRowsOptions = {}): DisplayRow[] {
  const maxLines = options.maxLines ?? 400;
  const rows: DisplayRow[] = [];
  let shown = 0;
  let omitted = 0;
  for (const file of files) {
    rows.push(fileRow(file));
    for (const hunk of file.hunks) {
      if (shown >= maxLines) {
        omitted += hunk.lines.length + 1;
        continue;
      }
      rows.push({
        kind: "hunk",
        text: `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`,
      });
      shown++;
      for (const line of hunk.lines) {
        if (shown >= maxLines) {
          omitted++;
          continue;
        }
        rows.push(lineRow(line));
        shown++;
      }
    }
  }
  if (omitted > 0) rows.push({ kind: "omitted", text: `... ${omitted} more diff lines` });
  return rows;
}

export interface PreviewRowsOptions {
  /** Rows shown at most: the latest ones, after a count of those left out. Default: 20. */
  maxRows?: number;
}

/**
 * The rows of a patch the model is still writing ({@link PatchPreview}), as {@link diffRows} draws
 * a finished one, with the `@@` lines as written (the line numbers are not known yet). Only the
 * end is kept, where the model is writing, so the live part of the screen stays shorter than it.
 */
export function previewRows(preview: PatchPreview, options: PreviewRowsOptions = {}): DisplayRow[] {
  const maxRows = Math.max(2, options.maxRows ?? 20);
  const rows: DisplayRow[] = [];
  for (const file of preview.files) {
    rows.push(fileRow(file));
    for (const hunk of file.hunks) {
      rows.push({ kind: "hunk", text: hunk.header });
      for (const line of hunk.lines) rows.push(lineRow(line));
    }
  }
  if (preview.truncated)
    rows.push({ kind: "omitted", text: "... the rest is shown once the patch is applied" });
  if (rows.length <= maxRows) return rows;
  const kept = rows.slice(rows.length - (maxRows - 1));
  return [{ kind: "omitted", text: `... ${rows.length - kept.length} lines above` }, ...kept];
}

function fileRow(file: Pick<FileDiff, "path" | "kind" | "from" | "added" | "removed">): DisplayRow {
  const label =
    file.kind === "add"
      ? "new file"
      : file.kind === "delete"
        ? "deleted"
        : file.kind === "move"
          ? `moved from ${file.from ?? "?"}`
          : "";
  return { kind: "file", path: file.path, added: file.added, removed: file.removed, label };
}

function lineRow(line: DiffLine): DisplayRow {
  const sign = line.kind === "add" ? "+" : line.kind === "remove" ? "-" : " ";
  return { kind: line.kind, text: `${sign}${expandTabs(line.text)}` };
}

export interface ExcerptOptions {
  /** Lines kept from the start. Default: 3. */
  head?: number;
  /** Lines kept from the end. Default: 3. */
  tail?: number;
}

/** The first and last lines of a command's output, with a count of what lies between. */
export function outputRows(output: string, options: ExcerptOptions = {}): DisplayRow[] {
  const head = options.head ?? 3;
  const tail = options.tail ?? 3;
  const lines = output.replace(/\s+$/, "").split("\n");
  if (lines.length === 1 && lines[0] === "") return [];
  const row = (text: string): DisplayRow => ({ kind: "output", text: expandTabs(text.replace(/\r$/, "")) });
  if (lines.length <= head + tail + 1) return lines.map(row);
  return [
    ...lines.slice(0, head).map(row),
    { kind: "omitted", text: `... ${lines.length - head - tail} more lines` },
    ...lines.slice(lines.length - tail).map(row),
  ];
}

export function expandTabs(text: string): string {
  return text.includes("\t") ? text.replaceAll("\t", "    ") : text;
}

/** Under a patch's diff: the errors it introduced (`error src/a.ts:3:7: ...`), then why some files were not checked. */
export function diagnosticRows(display: Extract<ToolDisplay, { kind: "diff" }>): DisplayRow[] {
  return [
    ...(display.diagnostics ?? []).map(
      (d): DisplayRow => ({
        kind: "output",
        text: expandTabs(`error ${d.path}:${d.line}:${d.column}: ${d.message}`),
      }),
    ),
    ...(display.diagnosticsNotices ?? []).map((text): DisplayRow => ({ kind: "omitted", text })),
  ];
}
