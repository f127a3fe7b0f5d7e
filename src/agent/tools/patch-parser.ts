import { ToolError } from "./tool-error.js";

/** One line of a hunk: `" "` context, `"-"` removed, `"+"` added. `text` excludes the prefix. */
export interface HunkLine {
  op: " " | "-" | "+";
  text: string;
}

export interface PatchHunk {
  /**
   * Texts of `@@ <text>` lines, in order: each names a line the hunk comes after (the enclosing
   * class, then the function), which places the hunk when its context alone is ambiguous.
   */
  anchors: string[];
  lines: HunkLine[];
  /** `*** End of File`: the hunk's context ends at the end of the file. */
  endOfFile: boolean;
  /** 1-based line of the patch text where the hunk starts. */
  line: number;
}

export type PatchOperation =
  | { kind: "add"; path: string; lines: string[]; line: number }
  | { kind: "delete"; path: string; line: number }
  | { kind: "update"; path: string; moveTo: string | null; hunks: PatchHunk[]; line: number };

export interface Patch {
  operations: PatchOperation[];
}

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
const ADD = "*** Add File: ";
const DELETE = "*** Delete File: ";
const UPDATE = "*** Update File: ";
const MOVE = "*** Move to: ";
const END_OF_FILE = "*** End of File";
/** A unified-diff hunk header some models write instead of a bare `@@`; its numbers are ignored. */
const UNIFIED_HEADER = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$/;
/** A heredoc wrapper (`apply_patch <<'EOF'` ... `EOF`) models copy from shell usage. */
const HEREDOC_START = /<<\s*(['"]?)(\w+)\1\s*$/;

/**
 * Parses the Codex patch format. Throws a ToolError `invalid_arguments` naming the 1-based line at
 * fault. Pure: no file is looked at.
 */
export function parsePatch(text: string): Patch {
  const lines = text.split(/\r?\n/);
  let first = 0;
  let last = lines.length - 1;
  while (first <= last && lines[first]!.trim() === "") first++;
  while (last >= first && lines[last]!.trim() === "") last--;
  const heredoc = first < last ? HEREDOC_START.exec(lines[first]!.trim()) : null;
  if (heredoc && lines[last]!.trim() === heredoc[2]) {
    first++;
    last--;
  }
  if (first > last || lines[first]!.trim() !== BEGIN) {
    throw parseError(first + 1, `the patch must start with "${BEGIN}".`);
  }
  if (first === last || lines[last]!.trim() !== END) {
    throw parseError(last + 1, `the patch must end with "${END}".`);
  }

  const operations: PatchOperation[] = [];
  let at = first + 1;
  const header = (prefix: string) => {
    // The prefix without its space: a header whose path is missing has lost it to trimming.
    const line = lines[at]!.trimEnd();
    if (!line.startsWith(prefix.trimEnd())) return null;
    const path = line.slice(prefix.length - 1).trim();
    if (path === "") throw parseError(at + 1, `"${prefix.trim()}" needs a path.`);
    return path;
  };
  const isHeader = (index: number) => {
    const line = lines[index]!;
    return index === last || [ADD, DELETE, UPDATE].some((prefix) => line.startsWith(prefix.trimEnd()));
  };

  while (at < last) {
    const start = at + 1;
    const addPath = header(ADD);
    if (addPath !== null) {
      at++;
      const added: string[] = [];
      for (; at < last && !isHeader(at); at++) {
        const line = lines[at]!;
        if (line.startsWith("+")) added.push(line.slice(1));
        else if (line === "") added.push("");
        else throw parseError(at + 1, `every line of an added file must start with "+", got ${quote(line)}.`);
      }
      // Blank lines without a "+" before the next header are spacing, not content.
      for (let end = at; end > start && lines[end - 1] === ""; end--) added.pop();
      operations.push({ kind: "add", path: addPath, lines: added, line: start });
      continue;
    }
    const deletePath = header(DELETE);
    if (deletePath !== null) {
      at++;
      operations.push({ kind: "delete", path: deletePath, line: start });
      continue;
    }
    const updatePath = header(UPDATE);
    if (updatePath === null) {
      throw parseError(
        start,
        `expected "${ADD}", "${DELETE}", "${UPDATE}" or "${END}", got ${quote(lines[at]!)}.`,
      );
    }
    at++;
    const moveTo = at < last ? header(MOVE) : null;
    if (moveTo !== null) at++;
    const hunks: PatchHunk[] = [];
    at = parseHunks(lines, at, last, isHeader, hunks);
    if (hunks.length === 0 && moveTo === null) {
      throw parseError(
        start,
        `"${UPDATE}${updatePath}" has no hunks; add "@@" hunks with the lines to change.`,
      );
    }
    operations.push({ kind: "update", path: updatePath, moveTo, hunks, line: start });
  }
  if (operations.length === 0) throw parseError(first + 1, "the patch changes no files.");
  checkPathsOnce(operations);
  return { operations };
}

/** Reads an Update File's hunks from `at` up to the next header; returns the index after them. */
function parseHunks(
  lines: readonly string[],
  at: number,
  last: number,
  isHeader: (index: number) => boolean,
  hunks: PatchHunk[],
): number {
  let hunk: PatchHunk | null = null;
  // Per line of the open hunk: whether the patch had it as an empty line.
  let rawBlank: boolean[] = [];
  const finish = () => {
    if (!hunk) return;
    // Blank lines without a leading space before the next header are spacing, not context.
    while (hunk.lines.length > 0 && rawBlank.at(-1)) {
      hunk.lines.pop();
      rawBlank.pop();
    }
    if (!hunk.lines.some((line) => line.op !== " ")) {
      throw parseError(hunk.line, `this hunk has no "-" or "+" lines; every hunk must change something.`);
    }
    hunks.push(hunk);
    hunk = null;
    rawBlank = [];
  };
  for (; at < last && !isHeader(at); at++) {
    const line = lines[at]!;
    const trimmed = line.trimEnd();
    if (trimmed === "@@" || trimmed.startsWith("@@ ")) {
      const anchor = (UNIFIED_HEADER.exec(trimmed)?.[1] ?? trimmed.slice(2)).trim();
      // Consecutive @@ lines narrow one hunk (class, then method).
      if (!hunk || hunk.lines.length > 0) {
        finish();
        hunk = { anchors: [], lines: [], endOfFile: false, line: at + 1 };
      }
      if (anchor !== "") hunk.anchors.push(anchor);
      continue;
    }
    if (trimmed === END_OF_FILE) {
      if (!hunk || hunk.lines.length === 0) throw parseError(at + 1, `"${END_OF_FILE}" must end a hunk.`);
      hunk.endOfFile = true;
      finish();
      continue;
    }
    const op = line[0];
    if (op !== " " && op !== "-" && op !== "+" && line !== "") {
      throw parseError(
        at + 1,
        `expected a hunk line starting with " " (context), "-" (remove) or "+" (add), or an "@@" line, got ${quote(line)}.`,
      );
    }
    // The first hunk may omit its "@@" line.
    hunk ??= { anchors: [], lines: [], endOfFile: false, line: at + 1 };
    // A blank line is context whose leading space was stripped on the way.
    hunk.lines.push(line === "" ? { op: " ", text: "" } : { op: op as HunkLine["op"], text: line.slice(1) });
    rawBlank.push(line === "");
  }
  finish();
  return at;
}

function checkPathsOnce(operations: readonly PatchOperation[]): void {
  const seen = new Map<string, number>();
  for (const operation of operations) {
    const paths = [operation.path];
    if (operation.kind === "update" && operation.moveTo !== null) paths.push(operation.moveTo);
    for (const path of paths) {
      const earlier = seen.get(path);
      if (earlier !== undefined) {
        throw parseError(
          operation.line,
          `${path} is already changed at line ${earlier}; put all changes to one file in one section.`,
        );
      }
      seen.set(path, operation.line);
    }
  }
}

function quote(line: string): string {
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line);
}

function parseError(line: number, message: string): ToolError {
  return new ToolError(
    "invalid_arguments",
    `Invalid patch, line ${line}: ${message} See the apply_patch description for the format.`,
  );
}
