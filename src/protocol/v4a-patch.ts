/**
 * The V4A patch format `apply_patch` takes (`*** Begin Patch` ... `*** End Patch`), parsed as it
 * streams: the agent's tool parses a whole patch, every face previews one while the model writes
 * it, and both go through {@link V4aPatchParser}. Pure: no file is looked at.
 */

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

/** What is wrong with a patch: the 1-based line at fault and a sentence for the model. */
export interface V4aPatchError {
  line: number;
  message: string;
}

export type V4aPatchResult = { ok: true; patch: Patch } | { ok: false; error: V4aPatchError };

export const BEGIN_PATCH = "*** Begin Patch";
export const END_PATCH = "*** End Patch";
const ADD = "*** Add File: ";
const DELETE = "*** Delete File: ";
const UPDATE = "*** Update File: ";
const MOVE = "*** Move to: ";
const END_OF_FILE = "*** End of File";
/** A unified-diff hunk header some models write instead of a bare `@@`; its numbers are ignored. */
const UNIFIED_HEADER = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$/;
/** A heredoc wrapper (`apply_patch <<'EOF'` ... `EOF`) models copy from shell usage. */
const HEREDOC_START = /<<\s*(['"]?)(\w+)\1\s*$/;

type AddOperation = Extract<PatchOperation, { kind: "add" }>;
type UpdateOperation = Extract<PatchOperation, { kind: "update" }>;

/** The file section the body is in; a Delete File has none (the next line is a header again). */
type Section =
  | { kind: "add"; operation: AddOperation }
  /** `moveAllowed`: no line followed the header yet (only that line may be its Move to). */
  | { kind: "update"; operation: UpdateOperation; moveAllowed: boolean };

/** A whole line and its 1-based number. */
interface Line {
  text: string;
  number: number;
}

/** Parses a whole patch: {@link V4aPatchParser} fed all of it, then ended. */
export function parseV4aPatch(text: string): V4aPatchResult {
  const parser = new V4aPatchParser();
  parser.push(text);
  return parser.end();
}

/**
 * Parses a patch fed in pieces cut anywhere, each line once, when its newline arrives: `operations`
 * is what is parsed so far and grows in place (an operation, hunk or line once there stays as it
 * is), and `end()` gives the result, the same however the text was cut.
 *
 * Where the format needs the end to decide, lines wait: blank lines until a line of the same
 * section follows them (before a header they are spacing), and an `*** End Patch` line (with a
 * heredoc's closing word) until the text ends or another line shows it was not the end.
 *
 * Strict for `end()`, lenient for `operations`: past an error (the first one is the result) it goes
 * on as a preview would, showing a rejected hunk line as context, an added file's rejected line as
 * content, and files before a missing `*** Begin Patch`; it stops at an `*** End Patch` line that
 * turns out not to be the last.
 */
export class V4aPatchParser {
  /** The operations so far, lenient past an error; grows in place. */
  readonly operations: PatchOperation[] = [];
  private partial = "";
  private lineCount = 0;
  private phase: "blank" | "heredoc" | "body" | "skip" = "blank";
  /** The first non-blank line, and the word closing the heredoc it opens, if it opens one. */
  private firstLine = 0;
  private heredocTag: string | null = null;
  private beginLine = 0;
  /** The patch does not start with `*** Begin Patch`; which line says so is known at the end. */
  private startFailed = false;
  /** The last non-blank line (trimmed), and the line before it (trimmed). */
  private last = { number: 0, trimmed: "", before: "" };
  private previousTrimmed = "";
  /** An `*** End Patch` line and what followed it: the end of the patch, unless more comes. */
  private held: Line[] = [];
  private heldTag = false;
  private section: Section | null = null;
  private hunk: PatchHunk | null = null;
  private hunkChanges = false;
  /** Empty lines waiting for a line of their section to follow them, and where they began. */
  private blanks = 0;
  private blanksLine = 0;
  private readonly paths = new Map<string, number>();
  private bodyError: V4aPatchError | null = null;
  private pathError: V4aPatchError | null = null;
  /** The line being parsed is an `*** End Patch` that turned out not to end the patch. */
  private endLine = false;
  /** An `*** End Patch` was followed by more: the rest is not shown. */
  private stopped = false;
  private result: V4aPatchResult | null = null;

  /** Parses the next piece of the text; a line is parsed once its newline arrives. */
  push(piece: string): void {
    if (this.result) throw new Error("V4aPatchParser: push after end");
    let start = 0;
    for (let newline = piece.indexOf("\n"); newline !== -1; newline = piece.indexOf("\n", start)) {
      const line = this.partial + piece.slice(start, newline);
      this.partial = "";
      this.line(line.endsWith("\r") ? line.slice(0, -1) : line);
      start = newline + 1;
    }
    this.partial += piece.slice(start);
  }

  /** Ends the text (its last line needs no newline) and gives the parse; later calls give it again. */
  end(): V4aPatchResult {
    if (this.result) return this.result;
    this.line(this.partial);
    this.partial = "";
    this.result = this.finish();
    return this.result;
  }

  private line(text: string): void {
    const number = ++this.lineCount;
    const trimmed = text.trim();
    if (trimmed !== "") this.last = { number, trimmed, before: this.previousTrimmed };
    this.previousTrimmed = trimmed;
    if (this.phase === "body") this.tail({ text, number }, trimmed);
    else if (this.phase === "skip") this.skip(text, trimmed, number);
    else if (trimmed === BEGIN_PATCH) {
      this.firstLine ||= number;
      this.begin(number);
    } else if (this.phase === "heredoc") this.failStart(text, trimmed, number);
    else if (trimmed !== "") {
      this.firstLine = number;
      const heredoc = HEREDOC_START.exec(trimmed);
      if (!heredoc) this.failStart(text, trimmed, number);
      else {
        this.heredocTag = heredoc[2]!;
        this.phase = "heredoc";
      }
    }
  }

  /** Not `*** Begin Patch` where it must be: an error (its line is known at the end), then a preview. */
  private failStart(text: string, trimmed: string, number: number): void {
    this.startFailed = true;
    this.phase = "skip";
    this.skip(text, trimmed, number);
  }

  private begin(number: number): void {
    this.phase = "body";
    this.beginLine = number;
  }

  /** Before a missing `*** Begin Patch`: the patch is shown from a file header on. */
  private skip(text: string, trimmed: string, number: number): void {
    if (trimmed === BEGIN_PATCH) this.begin(number);
    else if (isFileHeader(text)) {
      this.begin(number);
      this.body({ text, number });
    }
  }

  /** Holds an `*** End Patch` line (and a heredoc's closing word) until more shows it was not the end. */
  private tail(line: Line, trimmed: string): void {
    if (this.held.length > 0) {
      if (trimmed === "") {
        this.held.push(line);
        return;
      }
      if (!this.heldTag && trimmed === this.heredocTag) {
        this.held.push(line);
        this.heldTag = true;
        return;
      }
      const [end, ...after] = this.held;
      this.held = [];
      this.heldTag = false;
      this.endLine = true;
      this.body(end!);
      this.endLine = false;
      for (const held of after) this.body(held);
    }
    if (trimmed === END_PATCH) this.held.push(line);
    else this.body(line);
  }

  private body(line: Line): void {
    if (this.stopped) return;
    const section = this.section;
    if (!section || isFileHeader(line.text)) {
      this.closeSection();
      this.topLevel(line);
    } else if (section.kind === "add") this.addLine(section.operation, line);
    else this.updateLine(section, line);
  }

  private topLevel({ text, number }: Line): void {
    const addPath = this.header(text, ADD, number);
    if (addPath !== null) {
      const operation: AddOperation = { kind: "add", path: addPath, lines: [], line: number };
      this.operations.push(operation);
      this.section = { kind: "add", operation };
      this.claim(addPath, number);
      return;
    }
    const deletePath = this.header(text, DELETE, number);
    if (deletePath !== null) {
      this.operations.push({ kind: "delete", path: deletePath, line: number });
      this.claim(deletePath, number);
      return;
    }
    const updatePath = this.header(text, UPDATE, number);
    if (updatePath === null) {
      this.fail(number, `expected "${ADD}", "${DELETE}", "${UPDATE}" or "${END_PATCH}", got ${quote(text)}.`);
      return;
    }
    const operation: UpdateOperation = {
      kind: "update",
      path: updatePath,
      moveTo: null,
      hunks: [],
      line: number,
    };
    this.operations.push(operation);
    this.section = { kind: "update", operation, moveAllowed: true };
    this.claim(updatePath, number);
  }

  /** The path of a `prefix` header line, or null for another line. A missing path is an error. */
  private header(text: string, prefix: string, number: number): string | null {
    // The prefix without its space: a header whose path is missing has lost it to trimming.
    if (!text.startsWith("***")) return null;
    const line = text.trimEnd();
    if (!line.startsWith(prefix.trimEnd())) return null;
    const path = line.slice(prefix.length - 1).trim();
    if (path === "") this.fail(number, `"${prefix.trim()}" needs a path.`);
    return path;
  }

  private addLine(operation: AddOperation, { text, number }: Line): void {
    if (text === "") {
      this.blanks++;
      return;
    }
    const added = text.startsWith("+");
    if (!added) {
      this.fail(number, `every line of an added file must start with "+", got ${quote(text)}.`);
      if (this.stopped) return;
    }
    for (; this.blanks > 0; this.blanks--) operation.lines.push("");
    operation.lines.push(added ? text.slice(1) : text);
  }

  private updateLine(section: Extract<Section, { kind: "update" }>, { text, number }: Line): void {
    const operation = section.operation;
    if (section.moveAllowed) {
      section.moveAllowed = false;
      const moveTo = this.header(text, MOVE, number);
      if (moveTo !== null) {
        operation.moveTo = moveTo;
        this.claim(moveTo, operation.line);
        return;
      }
    }
    const trimmed = text.trimEnd();
    if (trimmed === "@@" || trimmed.startsWith("@@ ")) {
      const anchor = (UNIFIED_HEADER.exec(trimmed)?.[1] ?? trimmed.slice(2)).trim();
      // Consecutive @@ lines narrow one hunk (class, then method).
      if (!this.hunk || this.hunk.lines.length > 0 || this.blanks > 0) {
        this.finishHunk();
        this.openHunk(operation, number);
      }
      if (anchor !== "") this.hunk!.anchors.push(anchor);
      return;
    }
    if (trimmed === END_OF_FILE) {
      if ((!this.hunk || this.hunk.lines.length === 0) && this.blanks === 0) {
        this.fail(number, `"${END_OF_FILE}" must end a hunk.`);
        return;
      }
      if (this.hunk) this.hunk.endOfFile = true;
      this.finishHunk();
      return;
    }
    if (text === "") {
      // A blank line is context whose leading space was stripped on the way, unless spacing.
      if (this.blanks++ === 0) this.blanksLine = number;
      return;
    }
    const op = text[0];
    let line: HunkLine;
    if (op === " " || op === "-" || op === "+") line = { op, text: text.slice(1) };
    else {
      this.fail(
        number,
        `expected a hunk line starting with " " (context), "-" (remove) or "+" (add), or an "@@" line, got ${quote(text)}.`,
      );
      if (this.stopped) return;
      line = { op: " ", text };
    }
    // The first hunk may omit its "@@" line.
    if (!this.hunk) this.openHunk(operation, this.blanks > 0 ? this.blanksLine : number);
    const hunk = this.hunk!;
    for (; this.blanks > 0; this.blanks--) hunk.lines.push({ op: " ", text: "" });
    hunk.lines.push(line);
    if (line.op !== " ") this.hunkChanges = true;
  }

  private openHunk(operation: UpdateOperation, number: number): void {
    this.hunk = { anchors: [], lines: [], endOfFile: false, line: number };
    this.hunkChanges = false;
    operation.hunks.push(this.hunk);
  }

  /** Ends the open hunk: blank lines before what follows are spacing, and it must change something. */
  private finishHunk(): void {
    const hunk = this.hunk;
    const blanks = this.blanks;
    this.hunk = null;
    this.blanks = 0;
    const line = hunk ? hunk.line : blanks > 0 ? this.blanksLine : null;
    if (line !== null && !(hunk && this.hunkChanges)) {
      this.fail(line, `this hunk has no "-" or "+" lines; every hunk must change something.`);
    }
  }

  private closeSection(): void {
    const section = this.section;
    this.section = null;
    if (!section) return;
    if (section.kind === "add") {
      // Blank lines without a "+" before the next header are spacing, not content.
      this.blanks = 0;
      return;
    }
    this.finishHunk();
    const operation = section.operation;
    if (operation.hunks.length === 0 && operation.moveTo === null) {
      this.fail(
        operation.line,
        `"${UPDATE}${operation.path}" has no hunks; add "@@" hunks with the lines to change.`,
      );
    }
  }

  /** Each path is changed by one section; the first clash is reported if nothing else is wrong. */
  private claim(path: string, operationLine: number): void {
    const earlier = this.paths.get(path);
    if (earlier === undefined) this.paths.set(path, operationLine);
    else if (!this.pathError) {
      this.pathError = {
        line: operationLine,
        message: `${path} is already changed at line ${earlier}; put all changes to one file in one section.`,
      };
    }
  }

  private fail(line: number, message: string): void {
    this.bodyError ??= { line, message };
    // An `*** End Patch` the patch does not end with: what follows it is not shown.
    if (this.endLine) this.stopped = true;
  }

  /** The result, in the order a reader checks a patch: its start, its end, its body, its paths. */
  private finish(): V4aPatchResult {
    if (this.phase === "blank") return failure(this.lineCount + 1, startMessage());
    const last = this.last;
    const heredoc =
      this.heredocTag !== null && this.firstLine < last.number && last.trimmed === this.heredocTag;
    if (this.heredocTag !== null && !heredoc) return failure(this.firstLine, startMessage());
    if (this.startFailed) return failure(heredoc ? this.firstLine + 1 : this.firstLine, startMessage());
    const endTrimmed = heredoc ? last.before : last.trimmed;
    if (endTrimmed !== END_PATCH) {
      return failure(heredoc ? last.number - 1 : last.number, `the patch must end with "${END_PATCH}".`);
    }
    this.closeSection();
    if (this.bodyError) return { ok: false, error: this.bodyError };
    if (this.operations.length === 0) return failure(this.beginLine, "the patch changes no files.");
    if (this.pathError) return { ok: false, error: this.pathError };
    return { ok: true, patch: { operations: this.operations } };
  }
}

/** The header prefixes without their space: a header whose path is missing has lost it to trimming. */
const FILE_HEADERS = [ADD, DELETE, UPDATE].map((prefix) => prefix.trimEnd());

function isFileHeader(text: string): boolean {
  return text.startsWith("***") && FILE_HEADERS.some((prefix) => text.startsWith(prefix));
}

function startMessage(): string {
  return `the patch must start with "${BEGIN_PATCH}".`;
}

function failure(line: number, message: string): V4aPatchResult {
  return { ok: false, error: { line, message } };
}

function quote(line: string): string {
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line);
}
