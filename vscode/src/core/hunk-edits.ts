import type { DiffHunk, DiffLine, FileDiff } from "../../../src/protocol/agent.js";
import { splitLines, type TextLine } from "../../../src/protocol/text-lines.js";

export { splitLines, type TextLine } from "../../../src/protocol/text-lines.js";

/**
 * Which way a hunk is applied to a text: `reject` turns its new side back into its old side (the
 * text is the file after the patch); `apply` does the opposite (the text is the file before).
 */
export type HunkDirection = "reject" | "apply";

/** Replace `text.slice(start, end)` (UTF-16 offsets) with `text`. */
export interface TextReplacement {
  start: number;
  end: number;
  text: string;
}

export function applyReplacement(text: string, replacement: TextReplacement): string {
  return text.slice(0, replacement.start) + replacement.text + text.slice(replacement.end);
}

/** The lines a text must hold for the hunk to apply in `direction`: its new side to reject. */
function sideLines(hunk: DiffHunk, direction: HunkDirection): DiffLine[] {
  const dropped = direction === "reject" ? "remove" : "add";
  return hunk.lines.filter((line) => line.kind !== dropped);
}

/** Where the side starts, 0-based, in the text the hunk was computed against. */
function sideStart(hunk: DiffHunk, direction: HunkDirection): number {
  const [start, count] =
    direction === "reject" ? [hunk.newStart, hunk.newLines] : [hunk.oldStart, hunk.oldLines];
  // A side with no lines names the line after which the other side's lines go.
  return count === 0 ? start : start - 1;
}

/** How many lines applying the hunk in `direction` adds to the text (negative: removes). */
export function lineDelta(hunk: DiffHunk, direction: HunkDirection): number {
  return direction === "reject" ? hunk.oldLines - hunk.newLines : hunk.newLines - hunk.oldLines;
}

function matchesAt(lines: readonly TextLine[], side: readonly DiffLine[], at: number): boolean {
  if (at < 0 || at + side.length > lines.length) return false;
  for (let i = 0; i < side.length; i++) {
    const line = lines[at + i]!;
    const expected = side[i]!;
    if (line.text !== expected.text) return false;
    if (expected.noNewline && line.eol !== "") return false;
  }
  return true;
}

/**
 * Finds the line (0-based) where the hunk's side starts in `lines`: the match nearest to
 * `expected`, so a hunk whose lines repeat elsewhere still lands where it was, and one moved by
 * edits above it is still found. Null when the text no longer holds those lines.
 */
export function locateHunk(
  lines: readonly TextLine[],
  hunk: DiffHunk,
  direction: HunkDirection,
  expected: number,
): number | null {
  const side = sideLines(hunk, direction);
  if (side.length === 0) return expected >= 0 && expected <= lines.length ? expected : null;
  const reach = Math.max(expected, lines.length - expected) + 1;
  for (let distance = 0; distance <= reach; distance++) {
    if (matchesAt(lines, side, expected - distance)) return expected - distance;
    if (distance > 0 && matchesAt(lines, side, expected + distance)) return expected + distance;
  }
  return null;
}

/**
 * The edit that applies one hunk to `text` in `direction`, found nearest to line `expected`
 * (0-based); null when the text no longer holds the hunk's lines. Unchanged lines keep their own
 * endings; lines put back take the ending of the lines around them.
 */
export function planHunk(
  text: string,
  hunk: DiffHunk,
  direction: HunkDirection,
  expected: number,
): TextReplacement | null {
  const lines = splitLines(text);
  const at = locateHunk(lines, hunk, direction, expected);
  if (at === null) return null;
  const side = sideLines(hunk, direction);
  const offsets = lineOffsets(lines);
  const start = offsets[at]!;
  const end = offsets[at + side.length]!;
  const eol = dominantEol(lines, at, side.length);
  const dropped = direction === "reject" ? "add" : "remove";
  let cursor = at;
  let replacement = "";
  for (const line of hunk.lines) {
    if (line.kind === "context") {
      const kept = lines[cursor++]!;
      replacement += kept.text + kept.eol;
    } else if (line.kind === dropped) {
      cursor++;
    } else {
      replacement += line.text + (line.noNewline ? "" : eol);
    }
  }
  return { start, end, text: replacement };
}

function lineOffsets(lines: readonly TextLine[]): number[] {
  const offsets = [0];
  let offset = 0;
  for (const line of lines) {
    offset += line.text.length + line.eol.length;
    offsets.push(offset);
  }
  return offsets;
}

/** The ending for lines put back: that of the region's lines, else the file's first, else "\n". */
function dominantEol(lines: readonly TextLine[], at: number, count: number): string {
  for (let i = at; i < at + count; i++) if (lines[i]!.eol) return lines[i]!.eol;
  for (const line of lines) if (line.eol) return line.eol;
  return "\n";
}

export type HunkState = "pending" | "accepted" | "rejected";

/** Where a pending hunk is in the current text, for marking it in an editor. */
export interface HunkPlacement {
  index: number;
  /** First and last-plus-one line (0-based) of the hunk's new side in the text. */
  startLine: number;
  endLine: number;
  /** Lines (0-based) the patch added. */
  addedLines: number[];
  /** Removed lines, each run with the line (0-based) it was above; the text's length past the end. */
  removed: { beforeLine: number; lines: string[] }[];
}

/**
 * The review of one file of an applied patch, hunk by hunk: accepting keeps a hunk; rejecting
 * edits the text back to the hunk's old side. Pure: callers pass the file's current text and
 * apply the returned edit themselves (a WorkspaceEdit in the editor).
 */
export class FileReview {
  readonly states: HunkState[];

  constructor(
    /** The tool call that applied the patch. */
    readonly itemId: string,
    readonly diff: FileDiff,
  ) {
    this.states = diff.hunks.map(() => "pending");
  }

  get hunks(): readonly DiffHunk[] {
    return this.diff.hunks;
  }

  get pending(): number[] {
    return this.states.flatMap((state, index) => (state === "pending" ? [index] : []));
  }

  get settled(): boolean {
    return this.states.every((state) => state !== "pending");
  }

  /** How the file ended up once settled: all hunks accepted, all rejected, or some of each. */
  get outcome(): "accepted" | "rejected" | "mixed" | null {
    if (!this.settled) return null;
    if (this.states.every((state) => state === "accepted")) return "accepted";
    if (this.states.every((state) => state === "rejected")) return "rejected";
    return "mixed";
  }

  /** Where hunk `index` should start in the current text: its place, moved by the hunks rejected above it. */
  expectedLine(index: number): number {
    let line = sideStart(this.diff.hunks[index]!, "reject");
    for (let i = 0; i < index; i++) {
      if (this.states[i] === "rejected") line += lineDelta(this.diff.hunks[i]!, "reject");
    }
    return line;
  }

  /** The pending hunks found in `text` (those no longer there are left out). */
  place(text: string): HunkPlacement[] {
    const lines = splitLines(text);
    const placements: HunkPlacement[] = [];
    for (const index of this.pending) {
      const hunk = this.diff.hunks[index]!;
      const at = locateHunk(lines, hunk, "reject", this.expectedLine(index));
      if (at === null) continue;
      const addedLines: number[] = [];
      const removed: HunkPlacement["removed"] = [];
      let line = at;
      for (const diffLine of hunk.lines) {
        if (diffLine.kind === "remove") {
          const last = removed.at(-1);
          if (last && last.beforeLine === line) last.lines.push(diffLine.text);
          else removed.push({ beforeLine: line, lines: [diffLine.text] });
          continue;
        }
        if (diffLine.kind === "add") addedLines.push(line);
        line++;
      }
      placements.push({ index, startLine: at, endLine: line, addedLines, removed });
    }
    return placements;
  }

  /** The edit that rejects hunk `index` in `text`; null when the text no longer holds it. */
  planReject(text: string, index: number): TextReplacement | null {
    if (this.states[index] !== "pending") return null;
    return planHunk(text, this.diff.hunks[index]!, "reject", this.expectedLine(index));
  }

  accept(index: number): void {
    if (this.states[index] === "pending") this.states[index] = "accepted";
  }

  /** Records that the edit of {@link planReject} was applied. */
  markRejected(index: number): void {
    if (this.states[index] === "pending") this.states[index] = "rejected";
  }

  /** Settles every pending hunk alike (the file was accepted or restored as a whole). */
  settleAll(state: "accepted" | "rejected"): void {
    for (const index of this.pending) this.states[index] = state;
  }

  /** The pending hunk at or after `line` (0-based) in `text`, else the last one before it. */
  hunkNear(text: string, line: number): number | null {
    const placements = this.place(text);
    const containing = placements.find(
      (p) => line >= p.startLine && line < Math.max(p.endLine, p.startLine + 1),
    );
    if (containing) return containing.index;
    const after = placements.find((p) => p.startLine >= line);
    return after?.index ?? placements.at(-1)?.index ?? null;
  }
}
