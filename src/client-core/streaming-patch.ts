import type { DiffLine, FileDiff } from "../protocol/agent.js";
import { type PatchOperation, V4aPatchParser } from "../protocol/v4a-patch.js";

/**
 * The patch an `apply_patch` call is writing, as every face shows it while the model streams the
 * call's arguments: per file its path and kind, and its lines classified add / remove / context.
 * Pure and bounded; it never throws, whatever the model wrote.
 *
 * Parsed by `protocol/v4a-patch.ts`, the parser the agent's tool uses. Only whole lines are shown:
 * the line being written appears once its newline arrives (or the patch string ends), so a shown
 * line is never reclassified and a header being typed is never mistaken for context. The agent applies nothing until the call completes; the real diff
 * (`display.kind === "diff"`) replaces this preview then.
 */

/** The tool and its argument, as `src/agent/tools/apply-patch.ts` defines them. */
export const APPLY_PATCH_TOOL = "apply_patch";
const PATCH_ARGUMENT = "patch";

/** The most argument text looked at; past it the preview stops growing (`truncated`). 256 KiB. */
export const PATCH_PREVIEW_MAX_CHARS = 256 * 1024;

/** A hunk being written: `@@` and its anchors (the texts of its `@@` lines), and its lines. */
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
  const preview = new StreamingPatchPreview();
  preview.push(decoded.text);
  // The last line has no newline yet: it is still being written, unless the string ended.
  if (complete) preview.end();
  return { files: preview.files, complete, truncated };
}

/** The preview of a whole patch text. */
export function previewPatchText(text: string): PatchPreviewFile[] {
  const preview = new StreamingPatchPreview();
  preview.push(text);
  preview.end();
  return preview.files;
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

/**
 * The preview of a patch fed in pieces, from {@link V4aPatchParser} (the parser the agent's tool
 * uses): each piece costs work proportional to its length, and `files` grows in place. Lenient
 * where the tool is strict (the parser goes on past an error as a preview would); the tool reports
 * the error when the call completes.
 */
export class StreamingPatchPreview {
  readonly files: PatchPreviewFile[] = [];
  /** Counts the changes to `files` a face shows (a file, its path or kind, a line). */
  changes = 0;
  private readonly parser = new V4aPatchParser();
  /** How much of the last file is shown: its hunks, and its last hunk's anchors and lines. */
  private hunks = 0;
  private anchors = 0;
  private lines = 0;

  /** Parses the next piece of the patch text; a line is shown once its newline arrives. */
  push(text: string): void {
    this.parser.push(text);
    this.sync();
  }

  /** The patch text is complete: its last line is shown too. */
  end(): void {
    this.parser.end();
    this.sync();
  }

  /** Shows what the parser added: only its last operation, and that one's last hunk, can grow. */
  private sync(): void {
    const operations = this.parser.operations;
    for (let index = Math.max(this.files.length - 1, 0); index < operations.length; index++) {
      const operation = operations[index]!;
      let file = this.files[index];
      if (!file) {
        file = { path: operation.path, kind: operation.kind, hunks: [], added: 0, removed: 0 };
        this.files.push(file);
        this.changes++;
        this.hunks = 0;
        this.anchors = 0;
        this.lines = 0;
      }
      if (operation.kind === "add") this.syncAdded(file, operation.lines);
      if (operation.kind === "update") this.syncUpdated(file, operation);
    }
  }

  private syncAdded(file: PatchPreviewFile, lines: readonly string[]): void {
    for (; this.lines < lines.length; this.lines++) {
      if (file.hunks.length === 0) file.hunks.push({ header: "@@", lines: [] });
      this.show(file, file.hunks[0]!, { kind: "add", text: lines[this.lines]! });
    }
  }

  private syncUpdated(file: PatchPreviewFile, operation: Extract<PatchOperation, { kind: "update" }>): void {
    if (operation.moveTo !== null && file.kind === "update") {
      file.kind = "move";
      file.from = file.path;
      file.path = operation.moveTo;
      this.changes++;
    }
    for (let index = Math.max(this.hunks - 1, 0); index < operation.hunks.length; index++) {
      const hunk = operation.hunks[index]!;
      if (index === this.hunks) {
        file.hunks.push({ header: "@@", lines: [] });
        this.hunks++;
        this.anchors = 0;
        this.lines = 0;
      }
      const shown = file.hunks[index]!;
      if (hunk.anchors.length !== this.anchors) {
        shown.header = ["@@", ...hunk.anchors].join(" ");
        this.anchors = hunk.anchors.length;
      }
      for (; this.lines < hunk.lines.length; this.lines++) {
        const { op, text } = hunk.lines[this.lines]!;
        this.show(file, shown, { kind: op === "+" ? "add" : op === "-" ? "remove" : "context", text });
      }
    }
  }

  private show(file: PatchPreviewFile, hunk: PatchPreviewHunk, line: DiffLine): void {
    hunk.lines.push(line);
    this.changes++;
    if (line.kind === "add") file.added++;
    if (line.kind === "remove") file.removed++;
  }
}
