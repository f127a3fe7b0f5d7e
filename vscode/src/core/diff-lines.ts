import { type PatchPreviewHunk, patchPreviewOf } from "../../../src/client-core/streaming-patch.js";
import type { DiffHunk, DiffLine } from "../../../src/protocol/agent.js";

/** One line of a hunk as the chat view draws it: its CSS class and its text, sign included. */
export interface DiffTextLine {
  className: "hunk-head" | `line ${DiffLine["kind"]}`;
  text: string;
}

const SIGN: Record<DiffLine["kind"], string> = { add: "+", remove: "-", context: " " };

/**
 * The lines of a hunk, header first: an applied patch's hunk with its line numbers, or the hunk
 * of a patch being written with its `@@` lines as the model wrote them.
 */
export function hunkLines(hunk: DiffHunk | PatchPreviewHunk): DiffTextLine[] {
  const header =
    "header" in hunk
      ? hunk.header
      : `@@ -${hunk.oldStart},${hunk.oldLines} +${hunk.newStart},${hunk.newLines} @@`;
  return [
    { className: "hunk-head", text: header },
    ...hunk.lines.map(
      (line): DiffTextLine => ({ className: `line ${line.kind}`, text: `${SIGN[line.kind]}${line.text}` }),
    ),
  ];
}

/** A file of a patch being written, as the chat view lists it. */
export interface PreviewFileView {
  /** `path`, or `from → path` for a move. */
  label: string;
  kind: "add" | "update" | "delete" | "move";
  added: number;
  removed: number;
  hunks: DiffTextLine[][];
}

/** What the chat shows under a running `apply_patch` call while the model writes it. */
export interface PatchPreviewView {
  /** `writing` until the patch text is complete, then `applying` until the call completes. */
  status: "writing" | "applying";
  files: PreviewFileView[];
  /** The patch is too long to preview whole: the rest shows once it is applied. */
  truncated: boolean;
}

/** The preview of a running `apply_patch` call; null for any other call or a finished one. */
export function patchPreviewView(call: {
  name: string;
  status: string;
  arguments: string;
}): PatchPreviewView | null {
  const preview = patchPreviewOf(call);
  if (!preview) return null;
  return {
    status: preview.complete ? "applying" : "writing",
    files: preview.files.map((file) => ({
      label: file.from ? `${file.from} → ${file.path}` : file.path,
      kind: file.kind,
      added: file.added,
      removed: file.removed,
      hunks: file.hunks.map(hunkLines),
    })),
    truncated: preview.truncated,
  };
}
