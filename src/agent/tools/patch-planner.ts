import { splitLines, type TextLine } from "../../protocol/text-lines.js";
import type { Patch, PatchHunk } from "../../protocol/v4a-patch.js";
import { looksBinary } from "./internal/binary.js";
import { ToolError } from "./tool-error.js";

/** The outcome of one file operation, computed before anything is written. */
export interface FileChange {
  kind: "add" | "update" | "delete" | "move";
  /** The file as the patch names it; for a move, the source. */
  path: string;
  /** The destination of a move. */
  moveTo?: string;
  /** Content now; null when the file does not exist. */
  before: Buffer | null;
  /** Content after the patch; null when the file is deleted (or moved away). */
  after: Buffer | null;
}

/** Reads a file named as in the patch; null when it does not exist. */
export type PatchFileReader = (path: string) => Promise<Buffer | null>;

/**
 * Works out every file's new content. Only `readFile` touches the disk, and nothing is written:
 * a rejected patch throws a ToolError (`patch_rejected`, or `not_found`) before any change exists.
 */
export async function planPatch(patch: Patch, readFile: PatchFileReader): Promise<FileChange[]> {
  const changes: FileChange[] = [];
  for (const operation of patch.operations) {
    const before = await readFile(operation.path);
    switch (operation.kind) {
      case "add": {
        if (before !== null) {
          throw rejected(
            `cannot add ${operation.path}: it already exists. Read it and change it with "*** Update File: ${operation.path}".`,
          );
        }
        const text = operation.lines.length === 0 ? "" : `${operation.lines.join("\n")}\n`;
        changes.push({ kind: "add", path: operation.path, before: null, after: Buffer.from(text) });
        break;
      }
      case "delete":
        if (before === null) throw missing(operation.path, "delete");
        changes.push({ kind: "delete", path: operation.path, before, after: null });
        break;
      case "update": {
        if (before === null) throw missing(operation.path, "update");
        const after =
          operation.hunks.length === 0 ? before : applyHunks(operation.path, before, operation.hunks);
        if (operation.moveTo === null) {
          changes.push({ kind: "update", path: operation.path, before, after });
          break;
        }
        if ((await readFile(operation.moveTo)) !== null) {
          throw rejected(
            `cannot move ${operation.path} to ${operation.moveTo}: the destination already exists.`,
          );
        }
        changes.push({ kind: "move", path: operation.path, moveTo: operation.moveTo, before, after });
        break;
      }
      default: {
        const unknown: never = operation;
        throw new Error(`Unknown patch operation: ${JSON.stringify(unknown)}`);
      }
    }
  }
  return changes;
}

/** Applies hunks in order, keeping each untouched line's bytes, the BOM and the trailing-newline state. */
function applyHunks(path: string, content: Buffer, hunks: readonly PatchHunk[]): Buffer {
  const decoded = decode(path, content);
  const bom = decoded.startsWith("\uFEFF");
  const lines = splitLines(bom ? decoded.slice(1) : decoded);
  const crlf = lines.filter((line) => line.eol === "\r\n").length;
  const eol = crlf > lines.length - crlf ? "\r\n" : "\n";
  const endsWithNewline = lines.length === 0 || lines.at(-1)!.eol !== "";
  const texts = lines.map((line) => line.text);

  const edits: { start: number; removed: number; lines: TextLine[] }[] = [];
  let cursor = 0;
  hunks.forEach((hunk, i) => {
    const where = `hunk ${i + 1} of ${path} (patch line ${hunk.line})`;
    let from = cursor;
    for (const anchor of hunk.anchors) {
      const found = findAnchor(texts, anchor, from);
      if (found === -1) {
        throw rejected(
          `the "@@ ${anchor}" line of ${where} matches no line of the file after the previous hunk. ` +
            `Re-read ${path} with read_file and copy the line exactly.`,
        );
      }
      from = found + 1;
    }
    const old = hunk.lines.filter((line) => line.op !== "+").map((line) => line.text);
    let start: number;
    if (old.length === 0) {
      start = hunk.anchors.length > 0 && !hunk.endOfFile ? from : texts.length;
    } else {
      const found = locate(texts, old, from, hunk);
      if (typeof found !== "number") throw contextError(where, path, old, found, texts);
      start = found;
    }
    const replacement: TextLine[] = [];
    let original = start;
    for (const line of hunk.lines) {
      // Context keeps the file's own bytes: it may have matched with different whitespace.
      if (line.op === " ") replacement.push(lines[original++]!);
      else if (line.op === "-") original++;
      else replacement.push({ text: line.text, eol });
    }
    edits.push({ start, removed: old.length, lines: replacement });
    cursor = start + old.length;
  });

  const result = [...lines];
  for (const edit of edits.toReversed()) result.splice(edit.start, edit.removed, ...edit.lines);
  const out = result.map((line, i) => {
    const last = i === result.length - 1;
    if (last && !endsWithNewline) return line.text;
    return line.text + (line.eol || eol);
  });
  return Buffer.from((bom ? "\uFEFF" : "") + out.join(""));
}

function decode(path: string, content: Buffer): string {
  if (looksBinary(content)) {
    throw new ToolError("not_allowed", `${path} is a binary file; apply_patch only edits text files.`);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(content);
  } catch {
    throw new ToolError(
      "not_allowed",
      `${path} is not valid UTF-8; apply_patch cannot edit it without damage.`,
    );
  }
}

/** Ways a context line may match a file line, strictest first. */
const NORMALIZERS: ((line: string) => string)[] = [
  (line) => line,
  (line) => line.trimEnd(),
  (line) => line.trim(),
];

type Miss = { kind: "missing" } | { kind: "ambiguous"; at: number[] };

/**
 * Where `old` occurs at or after `from`. Each normalizer is tried in turn; the first that finds
 * the context decides. Without an anchor the context must occur once: patching the wrong one of
 * two identical blocks is worse than asking for more context. After an anchor the first
 * occurrence counts, since the anchor is what disambiguates.
 */
function locate(
  texts: readonly string[],
  old: readonly string[],
  from: number,
  hunk: PatchHunk,
): number | Miss {
  for (const normalize of NORMALIZERS) {
    const target = old.map(normalize);
    const matchesAt = (at: number) => target.every((line, i) => normalize(texts[at + i]!) === line);
    if (hunk.endOfFile) {
      const atEnd = texts.length - old.length;
      if (atEnd >= from && matchesAt(atEnd)) return atEnd;
    }
    const found: number[] = [];
    for (let at = from; at + old.length <= texts.length; at++) {
      if (!matchesAt(at)) continue;
      if (hunk.anchors.length > 0) return at;
      found.push(at);
      if (found.length > 5) break;
    }
    if (found.length === 1) return found[0]!;
    if (found.length > 1) return { kind: "ambiguous", at: found };
  }
  return { kind: "missing" };
}

function findAnchor(texts: readonly string[], anchor: string, from: number): number {
  for (const normalize of NORMALIZERS) {
    const target = normalize(anchor);
    for (let at = from; at < texts.length; at++) if (normalize(texts[at]!) === target) return at;
  }
  // Models often name the enclosing function by its signature alone (`@@ def run`).
  const needle = anchor.trim();
  for (let at = from; at < texts.length; at++) if (texts[at]!.includes(needle)) return at;
  return -1;
}

function contextError(
  where: string,
  path: string,
  old: readonly string[],
  miss: Miss,
  texts: readonly string[],
) {
  if (miss.kind === "ambiguous") {
    const places = miss.at.length > 5 ? `${miss.at.length - 1}+` : String(miss.at.length);
    const lines = miss.at.slice(0, 5).map((at) => at + 1);
    return rejected(
      `the context of ${where} matches ${places} places (lines ${lines.join(", ")}${miss.at.length > 5 ? ", …" : ""}). ` +
        `Add more unchanged lines around the change, or an "@@ <line>" naming the enclosing function or ` +
        "class, so it matches exactly one place.",
    );
  }
  const shown = old.slice(0, 12).map((line) => `    ${line}`);
  if (old.length > 12) shown.push(`    … (${old.length - 12} more lines)`);
  const present = new Set(texts.map((line) => line.trim()));
  const absent = old.find((line) => !present.has(line.trim()));
  const hint =
    absent === undefined ? "" : `\nThe line ${JSON.stringify(absent)} does not occur in the file at all.`;
  return rejected(
    `the context of ${where} was not found in the file (after the previous hunk, if any):\n${shown.join("\n")}${hint}\n` +
      `The file may have changed since you read it. Re-read ${path} with read_file and copy the ` +
      "context lines exactly as they are now.",
  );
}

function missing(path: string, action: string): ToolError {
  return new ToolError(
    "not_found",
    `Patch rejected, no files were changed: cannot ${action} ${path}: it does not exist. ` +
      "Use list_dir or search to find the right path.",
  );
}

function rejected(message: string): ToolError {
  return new ToolError("patch_rejected", `Patch rejected, no files were changed: ${message}`);
}
