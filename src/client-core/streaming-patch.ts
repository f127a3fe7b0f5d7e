import type { DiffLine, FileDiff } from "../protocol/agent.js";

/**
 * The patch an `apply_patch` call is writing, as every face shows it while the model streams the
 * call's arguments: per file its path and kind, and its lines classified add / remove / context.
 * Pure and bounded; it never throws, whatever the model wrote.
 *
 * Only whole lines are shown: the line being written appears once its newline arrives (or the
 * patch string ends), so a shown line is never reclassified and a header being typed is never
 * mistaken for context. The agent applies nothing until the call completes; the real diff
 * (`display.kind === "diff"`) replaces this preview then.
 */

/** The tool and its argument, as `src/agent/tools/apply-patch.ts` defines them. */
export const APPLY_PATCH_TOOL = "apply_patch";
const PATCH_ARGUMENT = "patch";

/** The most argument text looked at; past it the preview stops growing (`truncated`). 256 KiB. */
export const PATCH_PREVIEW_MAX_CHARS = 256 * 1024;

/** A hunk being written: its `@@` lines as the model wrote them (`@@` when it has none), and its lines. */
export interface PatchPreviewHunk {
  header: string;
  lines: DiffLine[];
}

export interface PatchPreviewFile {
  /** The destination for a move. */
  path: string;
  kind: FileDiff["kind"];
  /** The source path of a move. */
  from?: string;
  hunks: PatchPreviewHunk[];
  added: number;
  removed: number;
}

export interface PatchPreview {
  files: PatchPreviewFile[];
  /** The patch text is complete (its JSON string closed). */
  complete: boolean;
  /** The arguments were longer than {@link PATCH_PREVIEW_MAX_CHARS}: the rest is not shown. */
  truncated: boolean;
}

/**
 * The preview of a running `apply_patch` call, or null for any other call, a finished one, or
 * arguments that do not (yet) reach the patch text.
 */
export function patchPreviewOf(call: {
  name: string;
  status: string;
  arguments: string;
}): PatchPreview | null {
  if (call.name !== APPLY_PATCH_TOOL || call.status !== "running") return null;
  return previewPatch(call.arguments);
}

/** The preview of partial `apply_patch` arguments (`{"patch": "*** Begin Patch\n...`). */
export function previewPatch(argumentsJson: string): PatchPreview | null {
  const truncated = argumentsJson.length > PATCH_PREVIEW_MAX_CHARS;
  const decoded = partialJsonStringField(argumentsJson.slice(0, PATCH_PREVIEW_MAX_CHARS), PATCH_ARGUMENT);
  if (!decoded) return null;
  const complete = decoded.complete && !truncated;
  const lines = decoded.text.split("\n");
  // The last piece has no newline yet: it is still being written, unless the string ended.
  if (!complete) lines.pop();
  return { files: classifyPatchLines(lines), complete, truncated };
}

/** A string field decoded from the start of a JSON object that may be cut anywhere. */
export interface PartialString {
  text: string;
  /** The closing quote was seen. */
  complete: boolean;
}

/**
 * Reads top-level field `key` of a JSON object text that may end anywhere, as far as it goes:
 * escapes cut mid-way (`\`, `\u00`) and a high surrogate whose low half may still come are held
 * back. Null when the text is not an object, or ends before the field's string begins, or the
 * field is not a string. Decoding stops at an invalid escape, as if the text ended there. Other
 * fields before it are skipped; a complete string decodes exactly as `JSON.parse` would.
 */
export function partialJsonStringField(json: string, key: string): PartialString | null {
  const start = jsonStringFieldStart(json, key);
  if (start === null) return null;
  const value = readString(json, start);
  return { text: value.text, complete: value.complete };
}

/**
 * Where the string value of top-level field `key` begins in a JSON object text that may end
 * anywhere: the index after its opening quote, or null (not reached yet, not an object, not a string).
 */
export function jsonStringFieldStart(json: string, key: string): number | null {
  let at = skipSpace(json, 0);
  if (json[at] !== "{") return null;
  at++;
  for (;;) {
    at = skipSpace(json, at);
    if (json[at] !== '"') return null;
    const name = readString(json, at + 1);
    if (!name.complete) return null;
    at = skipSpace(json, name.end);
    if (json[at] !== ":") return null;
    at = skipSpace(json, at + 1);
    if (name.text === key) return json[at] === '"' ? at + 1 : null;
    at = skipValue(json, at);
    if (at === -1) return null;
    at = skipSpace(json, at);
    if (json[at] !== ",") return null;
    at++;
  }
}

/**
 * Decodes a JSON string body from `start` (after its opening quote) as far as it is written: its
 * text, whether the closing quote was seen, and where decoding stopped (`end`: after the closing
 * quote, or where an escape or a surrogate pair cut short begins, so decoding can go on from there).
 */
export function decodeJsonString(
  json: string,
  start: number,
): { text: string; complete: boolean; end: number } {
  return readString(json, start);
}

const ESCAPES: Record<string, string> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

/** Decodes a JSON string body from `start` (after its opening quote) to its closing quote or the end. */
function readString(json: string, start: number): { text: string; complete: boolean; end: number } {
  let text = "";
  let at = start;
  let run = start;
  while (at < json.length) {
    const char = json[at]!;
    if (char === '"') return { text: text + json.slice(run, at), complete: true, end: at + 1 };
    if (char !== "\\") {
      at++;
      continue;
    }
    text += json.slice(run, at);
    const escaped = json[at + 1];
    if (escaped === undefined) return { text, complete: false, end: at };
    if (escaped !== "u") {
      const decoded = ESCAPES[escaped];
      if (decoded === undefined) return { text, complete: false, end: at };
      text += decoded;
      at += 2;
    } else {
      const unit = hexUnit(json, at + 2);
      if (unit === null) return { text, complete: false, end: at };
      // A high surrogate at the end waits for its low half, which may be the next escape.
      if (unit >= 0xd800 && unit <= 0xdbff && json.length - (at + 6) < 6 && isPrefixOfEscape(json, at + 6))
        return { text, complete: false, end: at };
      text += String.fromCharCode(unit);
      at += 6;
    }
    run = at;
  }
  text += json.slice(run);
  // A raw high surrogate at the end may be half of a character cut between two deltas.
  const last = text.charCodeAt(text.length - 1);
  if (json.length > run && last >= 0xd800 && last <= 0xdbff)
    return { text: text.slice(0, -1), complete: false, end: json.length - 1 };
  if (last >= 0xd800 && last <= 0xdbff) text = text.slice(0, -1);
  return { text, complete: false, end: json.length };
}

/** The code unit of the 4 hex digits at `at`, or null when they are cut short or not hex. */
function hexUnit(json: string, at: number): number | null {
  const digits = json.slice(at, at + 4);
  return /^[0-9a-fA-F]{4}$/.test(digits) ? Number.parseInt(digits, 16) : null;
}

/** Whether what is left from `at` could still grow into a `\uXXXX` escape. */
function isPrefixOfEscape(json: string, at: number): boolean {
  const rest = json.slice(at);
  return /^(?:\\(?:u[0-9a-fA-F]{0,3})?)?$/.test(rest);
}

function skipSpace(json: string, at: number): number {
  while (
    at < json.length &&
    (json[at] === " " || json[at] === "\n" || json[at] === "\r" || json[at] === "\t")
  )
    at++;
  return at;
}

/** The index after the JSON value at `at`, or -1 when it is cut short. */
function skipValue(json: string, at: number): number {
  let depth = 0;
  while (at < json.length) {
    const char = json[at]!;
    if (char === '"') {
      const string = readString(json, at + 1);
      if (!string.complete) return -1;
      at = string.end;
    } else if (char === "{" || char === "[") {
      depth++;
      at++;
    } else if (char === "}" || char === "]") {
      if (depth === 0) return at;
      depth--;
      at++;
    } else if (char === "," && depth === 0) return at;
    else at++;
  }
  return -1;
}

const BEGIN = "*** Begin Patch";
const END = "*** End Patch";
const ADD = "*** Add File:";
const DELETE = "*** Delete File:";
const UPDATE = "*** Update File:";
const MOVE = "*** Move to:";
const END_OF_FILE = "*** End of File";

/**
 * Classifies whole lines of a Codex patch (the format `src/agent/tools/patch-parser.ts` parses):
 * file headers open files, `@@` lines open hunks, and each hunk line is add, remove or context by
 * its first character. Blank lines are held until a line of the same hunk follows them, since the
 * parser drops blank lines before a header as spacing. Lenient where the parser is strict: a line
 * it would reject is shown as context, and the tool reports the error when the call completes.
 */
export function classifyPatchLines(lines: readonly string[]): PatchPreviewFile[] {
  const classifier = new PatchLineClassifier();
  for (const line of lines) classifier.push(line);
  return classifier.files;
}

/**
 * {@link classifyPatchLines} one line at a time, for a patch that is still being written: each
 * line costs work proportional to its length. `files` grows in place.
 */
export class PatchLineClassifier {
  readonly files: PatchPreviewFile[] = [];
  /** Counts the changes to `files` a face shows (a file, its path or kind, a line). */
  changes = 0;
  private file: PatchPreviewFile | null = null;
  private hunk: PatchPreviewHunk | null = null;
  private begun = false;
  private ended = false;
  private blanks = 0;

  /** Classifies the next whole line (without its newline). */
  push(raw: string): void {
    if (this.ended) return;
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const trimmed = line.trimEnd();
    const header = headerOf(trimmed);
    if (!this.begun) {
      // Blank lines and a heredoc wrapper (`apply_patch <<'EOF'`) may come before the patch.
      this.begun = trimmed.trim() === BEGIN || header !== null;
      if (!header) return;
    }
    if (trimmed.trim() === END) {
      this.ended = true;
      return;
    }
    const current = this.file;
    if (line === "") {
      this.blanks++;
      return;
    }
    if (header || trimmed === "@@" || trimmed.startsWith("@@ ") || trimmed === END_OF_FILE) this.blanks = 0;
    if (header?.kind === "move") {
      if (current?.kind === "update" && current.hunks.length === 0) {
        current.kind = "move";
        current.from = current.path;
        current.path = header.path;
        this.changes++;
      }
    } else if (header) {
      this.file = { path: header.path, kind: header.kind, hunks: [], added: 0, removed: 0 };
      this.files.push(this.file);
      this.hunk = null;
      this.changes++;
    } else if (!current || current.kind === "delete") {
      // Nothing to show outside a file's section.
    } else if (trimmed === "@@" || trimmed.startsWith("@@ ")) {
      const open = this.hunk;
      // Consecutive @@ lines narrow one hunk (class, then method).
      if (open && open.lines.length === 0) open.header += ` ${trimmed.slice(2).trim()}`;
      else {
        this.hunk = { header: trimmed, lines: [] };
        current.hunks.push(this.hunk);
      }
    } else if (trimmed === END_OF_FILE) {
      this.hunk = null;
    } else {
      const added = current.kind === "add";
      for (; this.blanks > 0; this.blanks--) this.add(current, { kind: added ? "add" : "context", text: "" });
      this.add(current, lineOf(line, added));
    }
  }

  private add(current: PatchPreviewFile, line: DiffLine): void {
    if (!this.hunk) {
      this.hunk = { header: "@@", lines: [] };
      current.hunks.push(this.hunk);
    }
    this.hunk.lines.push(line);
    this.changes++;
    if (line.kind === "add") current.added++;
    if (line.kind === "remove") current.removed++;
  }
}

/** A hunk line by its first character; in an added file every line is an addition. */
function lineOf(line: string, addedFile: boolean): DiffLine {
  if (line.startsWith("+")) return { kind: "add", text: line.slice(1) };
  if (addedFile) return { kind: "context", text: line };
  if (line.startsWith("-")) return { kind: "remove", text: line.slice(1) };
  return { kind: "context", text: line.startsWith(" ") ? line.slice(1) : line };
}

function headerOf(line: string): { kind: PatchPreviewFile["kind"]; path: string } | null {
  const headers = [
    [ADD, "add"],
    [DELETE, "delete"],
    [UPDATE, "update"],
    [MOVE, "move"],
  ] as const;
  for (const [prefix, kind] of headers) {
    if (line.startsWith(prefix)) return { kind, path: line.slice(prefix.length).trim() };
  }
  return null;
}
