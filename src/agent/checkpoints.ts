import { readdir, rm, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative } from "node:path";
import { SparkError } from "../protocol/errors.js";
import {
  describeRestore,
  type JournalEntry,
  type JournalFile,
  PartialRestoreError,
  restore,
} from "./edit-journal.js";
import { JsonLinesFile, type LineFileSystem, readJsonLines } from "./json-lines-file.js";
import { readIfExists } from "./tools/internal/atomic-write.js";

/** Bytes of file content (before + after) one turn may keep for rewinding its code: 4 MiB. */
export const MAX_CHECKPOINT_TURN_BYTES = 4 * 1024 * 1024;
/** Bytes of file content one session may keep for rewinding code: 32 MiB. */
export const MAX_CHECKPOINT_SESSION_BYTES = 32 * 1024 * 1024;

export interface CheckpointsOptions {
  /** See {@link MAX_CHECKPOINT_TURN_BYTES}. */
  maxTurnBytes?: number;
  /** See {@link MAX_CHECKPOINT_SESSION_BYTES}. */
  maxSessionBytes?: number;
  /** How a path is named in a refusal (workspace-relative). Default: as is. */
  name?: (path: string) => string;
  /**
   * The workspace: a stored edit naming a file outside it (a tampered file) is not loaded, and
   * its turn cannot rewind code. Default: every path is loaded.
   */
  root?: string;
  /**
   * Told, in whole sentences for a notice, what the person should know: a checkpoints file that
   * could not be read (or only in part) on resume, a write that failed (once per outage; the
   * records are kept and written with the next one), and its recovery. Default: not told.
   */
  onWarning?: (message: string) => void;
  /**
   * The turns a resumed session had (its user messages' ids). When its checkpoints file cannot be
   * read, these turns are marked unrewindable for code, saying why, rather than rewinding nothing.
   */
  earlierTurns?: readonly string[];
  /**
   * The file is compacted (rewritten with only what rewinding still needs, atomically) once it
   * grows past this many bytes. Default: twice {@link maxSessionBytes}, so the live records (base64:
   * 4/3 of the content) always fit well under it.
   */
  compactAtBytes?: number;
  /** A file larger than this is not read (a resumed session says so). Default: 8 times {@link compactAtBytes}. */
  maxFileBytes?: number;
  /** Default: node:fs (tests inject failures). */
  fs?: LineFileSystem;
}

/** One edit (one apply_patch call) made during the turn started by user message `turn`. */
interface CheckpointEdit {
  seq: number;
  turn: string;
  files: Pick<JournalFile, "path" | "before" | "after" | "mode">[];
  /** The journal's entry, while this process has it (so undo no longer offers a rewound edit). */
  entry?: JournalEntry;
}

/** A file as a code rewind sees it: before the turns' first edit, and as their last one left it. */
interface RewoundFile {
  path: string;
  before: Buffer | null;
  after: Buffer | null;
  mode?: number;
}

interface StoredFile {
  path: string;
  before: string | null;
  after: string | null;
  mode?: number;
}

/** One line of the checkpoints file (JSON Lines, appended; replayed in order on resume). */
type CheckpointRecord =
  | { kind: "edit"; seq: number; turn: string; files: StoredFile[] }
  /** An undo or reject restored these files of edit `seq` itself. */
  | { kind: "forget"; seq: number; paths: string[] }
  /** The turn's code cannot be rewound (its edits were over the bounds). */
  | { kind: "unrewindable"; turn: string; reason: string }
  /** A code rewind restored these turns' files. */
  | { kind: "drop"; turns: string[] }
  /** A conversation-only rewind cut these turns: their edits belong to `to` now (null: none). */
  | { kind: "move"; turns: string[]; to: string | null };

/**
 * Every turn is a checkpoint: the files each turn's edits changed, content before and after
 * (bounded by bytes per turn and per session), so the code can go back to before any turn. A turn
 * is named by the id of the user message that starts it (a steer starts one too). Built on the
 * edit journal: it hears of every recorded edit and every undo. Kept beside the session's
 * transcript (`<thread>.checkpoints`, 0600), so a resumed session can rewind too; in memory only
 * without a file. The file is appended to, and compacted atomically once it grows past a bound, so
 * a resumed session can always read it; a write that fails loses nothing (see JsonLinesFile).
 */
export class Checkpoints {
  private readonly edits: CheckpointEdit[] = [];
  private readonly unrewindable = new Map<string, string>();
  private seq = 0;
  private file: JsonLinesFile | null = null;
  /** Bytes the file holds (or will, once what waits is written). */
  private fileBytes = 0;
  private compactAt: number;
  private compacting: Promise<void> | null = null;
  private readonly maxTurnBytes: number;
  private readonly maxSessionBytes: number;
  private readonly name: (path: string) => string;

  private constructor(private readonly options: CheckpointsOptions) {
    this.maxTurnBytes = options.maxTurnBytes ?? MAX_CHECKPOINT_TURN_BYTES;
    this.maxSessionBytes = options.maxSessionBytes ?? MAX_CHECKPOINT_SESSION_BYTES;
    this.compactAt = options.compactAtBytes ?? this.maxSessionBytes * 2;
    this.name = options.name ?? ((path) => path);
  }

  /** Checkpoints kept in memory only. */
  static inMemory(options: CheckpointsOptions = {}): Checkpoints {
    return new Checkpoints(options);
  }

  /**
   * Checkpoints kept in `file`, with what it holds already (a resumed session), streamed line by
   * line. What cannot be read is said through `onWarning`, never dropped silently: a file that is
   * unreadable or over `maxFileBytes` leaves the {@link CheckpointsOptions.earlierTurns} unrewindable
   * for code (with the reason), and damaged lines are counted. A file over the compaction bound (an
   * older Spark appended without one) is compacted at once. The file is made private (0600).
   */
  static async open(file: string, options: CheckpointsOptions = {}): Promise<Checkpoints> {
    const checkpoints = new Checkpoints(options);
    const { root } = options;
    const outside = (path: string) =>
      root !== undefined &&
      (!isAbsolute(path) || relative(root, path).startsWith("..") || isAbsolute(relative(root, path)));
    await removeLeftTemps(file);
    const maxFileBytes = options.maxFileBytes ?? checkpoints.compactAt * 8;
    let size = 0;
    let lost: string | null = null;
    try {
      size = (await stat(file)).size;
      if (size > maxFileBytes) lost = `it is ${mib(size)}, over the ${mib(maxFileBytes)} Spark reads`;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") lost = (error as Error).message;
    }
    if (size > 0 && lost === null) {
      try {
        let unknown = 0;
        const read = await readJsonLines(file, (value) => {
          const record = value as CheckpointRecord;
          try {
            if (record.kind === "edit" && record.files.some((stored) => outside(stored.path))) {
              const reason = "its checkpoint names a file outside the workspace";
              checkpoints.apply({ kind: "unrewindable", turn: record.turn, reason });
            } else checkpoints.apply(record);
          } catch {
            unknown++;
          }
        });
        const damaged = read.damaged + unknown;
        if (damaged > 0) {
          checkpoints.warn(
            `${damaged} damaged line${damaged > 1 ? "s" : ""} of the code checkpoints (${file}) could not be read: rewinding code may miss the edits they held.`,
          );
        }
      } catch (error) {
        lost = (error as Error).message;
      }
    }
    checkpoints.storeIn(file);
    checkpoints.fileBytes = size;
    checkpoints.file?.secure();
    if (lost !== null) {
      checkpoints.warn(
        `The code checkpoints of this session (${file}) could not be read: ${lost}. The code of its earlier turns cannot be rewound; the conversation can.`,
      );
      const reason = `its checkpoints could not be read (${lost})`;
      for (const turn of options.earlierTurns ?? []) checkpoints.markUnrewindable(turn, reason);
    }
    // A file too large to read is replaced too: what it held was lost already, and said so.
    if (size > maxFileBytes || (lost === null && checkpoints.fileBytes > checkpoints.compactAt)) {
      checkpoints.compact();
    }
    return checkpoints;
  }

  /** Keeps the records from now on in `file` (a new session's, named once its thread has an id). */
  storeIn(file: string): void {
    this.file = new JsonLinesFile(file, {
      ...(this.options.fs ? { fs: this.options.fs } : {}),
      onError: (error) =>
        this.warn(
          `The code checkpoints could not be saved (${file}): ${error.message}. Rewinding code still works in this session; what was not saved is kept and written with the next edit.`,
        ),
      onRecovered: () => this.warn(`The code checkpoints are saved again (${file}).`),
    });
  }

  /** Bytes of file content kept. */
  get bytes(): number {
    return this.edits.reduce((sum, edit) => sum + editBytes(edit.files), 0);
  }

  /**
   * Each file the kept edits changed (absolute path), with its content before the earliest of them
   * (null: it did not exist), in the order first changed; and how many turns' edits were not kept.
   */
  originals(): { files: Map<string, Buffer | null>; unkept: number } {
    const files = new Map<string, Buffer | null>();
    for (const edit of [...this.edits].sort((a, b) => a.seq - b.seq))
      for (const file of edit.files) if (!files.has(file.path)) files.set(file.path, file.before);
    return { files, unkept: this.unrewindable.size };
  }

  /** An edit was made during turn `turn`. */
  recorded(turn: string, entry: JournalEntry): void {
    if (this.unrewindable.has(turn)) return;
    const files = entry.files.map(({ path, before, after, mode }) => ({
      path,
      before,
      after,
      ...(mode === undefined ? {} : { mode }),
    }));
    const bytes = editBytes(files);
    const turnBytes = this.turnBytes(turn) + bytes;
    const reason =
      turnBytes > this.maxTurnBytes
        ? `its edits change more than ${mib(this.maxTurnBytes)} of files`
        : this.bytes + bytes > this.maxSessionBytes
          ? `the session's checkpoints reached ${mib(this.maxSessionBytes)}`
          : null;
    if (reason) {
      this.markUnrewindable(turn, reason);
      return;
    }
    const edit: CheckpointEdit = { seq: ++this.seq, turn, files, entry };
    this.edits.push(edit);
    this.write({ kind: "edit", seq: edit.seq, turn, files: files.map(storedFile) });
  }

  /** An undo or reject restored `files` of `entry` itself: they are no longer the turn's to rewind. */
  restored(entry: JournalEntry, files: readonly JournalFile[]): void {
    const edit = this.edits.find((candidate) => candidate.entry === entry);
    if (!edit) return;
    const record = { kind: "forget", seq: edit.seq, paths: files.map((file) => file.path) } as const;
    this.apply(record);
    this.write(record);
  }

  /**
   * Restores the files changed by `turns` (and every edit of them) to their content from before
   * the first of them, newest edits undone first. Refused with a SparkError (409, nothing touched)
   * naming the file when a file is not as the last of those edits left it (the person changed it
   * since), and when one of the turns was over the bounds. A file already as it was before is
   * left alone (a rewind cut short, tried again). A restore cut short is a SparkError naming
   * exactly which files were restored and which were not, and why. Returns the restored paths and
   * the journal entries they came from.
   */
  async rewind(turns: ReadonlySet<string>): Promise<{ paths: string[]; entries: JournalEntry[] }> {
    for (const turn of turns) {
      const reason = this.unrewindable.get(turn);
      if (reason !== undefined) {
        throw new SparkError(
          "invalid_request",
          `The code cannot be rewound past that turn: ${reason}. Rewind the conversation only.`,
          { param: "item_id", status: 409 },
        );
      }
    }
    const edits = this.edits.filter((edit) => turns.has(edit.turn));
    // Per file: the content before the first edit, and what the last one wrote.
    const files = new Map<string, RewoundFile>();
    for (const edit of edits) {
      for (const file of edit.files) {
        const known = files.get(file.path);
        if (known) known.after = file.after;
        else files.set(file.path, { ...file });
      }
    }
    // A file already as it was (a rewind cut short, tried again) needs nothing.
    const toRestore: RewoundFile[] = [];
    for (const file of files.values()) {
      const current = await readIfExists(file.path);
      const unchanged = current === null ? file.after === null : file.after?.equals(current) === true;
      const restored = current === null ? file.before === null : file.before?.equals(current) === true;
      if (unchanged) toRestore.push(file);
      else if (!restored) {
        throw new SparkError(
          "invalid_request",
          `${this.name(file.path)} changed since the agent edited it; nothing was restored and every file was left as it is.`,
          { param: "item_id", status: 409 },
        );
      }
    }
    try {
      await restore(toRestore);
    } catch (error) {
      const message =
        error instanceof PartialRestoreError
          ? `${describeRestore(error.restored, error.failed, this.name)} Rewind again to restore the rest.`
          : (error as Error).message;
      throw new SparkError("server_error", message, { cause: error });
    }
    const record: CheckpointRecord = { kind: "drop", turns: [...turns] };
    this.apply(record);
    this.write(record);
    return {
      paths: [...files.keys()],
      entries: edits.flatMap((edit) => (edit.entry ? [edit.entry] : [])),
    };
  }

  /**
   * The conversation went back to before `turns` and the code stays: their edits now belong to
   * turn `to` (the last kept one), so rewinding it undoes them too; with no kept turn they are let go.
   */
  moveTo(turns: ReadonlySet<string>, to: string | null): void {
    const record: CheckpointRecord = { kind: "move", turns: [...turns], to };
    this.apply(record);
    this.write(record);
  }

  /** Resolves when every record so far is on disk (or a retry failed again) and no compaction runs. */
  async flush(): Promise<void> {
    while (this.compacting) await this.compacting;
    await this.file?.flush();
  }

  /** The records that rebuild what is kept now: the file compacted. */
  private snapshot(): CheckpointRecord[] {
    return [
      ...[...this.unrewindable].map(([turn, reason]) => ({ kind: "unrewindable" as const, turn, reason })),
      ...this.edits.map((edit) => ({
        kind: "edit" as const,
        seq: edit.seq,
        turn: edit.turn,
        files: edit.files.map(storedFile),
      })),
    ];
  }

  /**
   * Rewrites the file with the {@link snapshot} (atomically: see JsonLinesFile.replace). What is
   * kept may itself be near the bound: the next compaction waits until the file doubles then.
   */
  private compact(): void {
    const file = this.file;
    if (!file || this.compacting) return;
    const records = this.snapshot();
    const bytes = records.reduce((sum, record) => sum + Buffer.byteLength(JSON.stringify(record)) + 1, 0);
    const before = this.fileBytes;
    this.compacting = file.replace(records).then((replaced) => {
      this.compacting = null;
      if (replaced) this.fileBytes = bytes + (this.fileBytes - before);
      // What is kept may itself be near the bound: the next try waits until the file is twice that.
      this.compactAt = Math.max(this.compactAt, 2 * (replaced ? bytes : this.fileBytes));
      // Records appended while it ran may have grown it past the bound again.
      if (this.fileBytes > this.compactAt) this.compact();
    });
  }

  private markUnrewindable(turn: string, reason: string): void {
    const record = { kind: "unrewindable", turn, reason } as const;
    this.write(record);
    this.apply(record);
  }

  private warn(message: string): void {
    this.options.onWarning?.(message);
  }

  private turnBytes(turn: string): number {
    return this.edits.reduce((sum, edit) => sum + (edit.turn === turn ? editBytes(edit.files) : 0), 0);
  }

  private apply(record: CheckpointRecord): void {
    switch (record.kind) {
      case "edit":
        this.seq = Math.max(this.seq, record.seq);
        this.edits.push({ seq: record.seq, turn: record.turn, files: record.files.map(loadedFile) });
        break;
      case "forget": {
        const edit = this.edits.find((candidate) => candidate.seq === record.seq);
        if (edit) edit.files = edit.files.filter((file) => !record.paths.includes(file.path));
        break;
      }
      case "unrewindable":
        this.unrewindable.set(record.turn, record.reason);
        this.removeEdits((edit) => edit.turn === record.turn);
        break;
      case "drop":
        this.removeEdits((edit) => record.turns.includes(edit.turn));
        for (const turn of record.turns) this.unrewindable.delete(turn);
        break;
      case "move": {
        const { to } = record;
        if (to === null) this.removeEdits((edit) => record.turns.includes(edit.turn));
        else for (const edit of this.edits) if (record.turns.includes(edit.turn)) edit.turn = to;
        for (const turn of record.turns) {
          const reason = this.unrewindable.get(turn);
          this.unrewindable.delete(turn);
          if (reason !== undefined && to !== null && !this.unrewindable.has(to))
            this.unrewindable.set(to, reason);
        }
        break;
      }
      default: {
        const unknown: never = record;
        throw new Error(`Unknown checkpoint record ${JSON.stringify(unknown)}`);
      }
    }
  }

  private removeEdits(matches: (edit: CheckpointEdit) => boolean): void {
    for (let i = this.edits.length - 1; i >= 0; i--) if (matches(this.edits[i]!)) this.edits.splice(i, 1);
  }

  private write(record: CheckpointRecord): void {
    if (!this.file) return;
    this.fileBytes += this.file.append(record);
    if (this.fileBytes > this.compactAt) this.compact();
  }
}

/** Removes temp files a compaction killed half-way left beside `file`. */
async function removeLeftTemps(file: string): Promise<void> {
  const prefix = `.${basename(file)}.`;
  const names = await readdir(dirname(file)).catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((name) => name.startsWith(prefix) && name.endsWith(".tmp"))
      .map((name) => rm(join(dirname(file), name), { force: true }).catch(() => {})),
  );
}

function editBytes(files: readonly Pick<JournalFile, "before" | "after">[]): number {
  return files.reduce((sum, file) => sum + (file.before?.length ?? 0) + (file.after?.length ?? 0), 0);
}

function mib(bytes: number): string {
  return `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MiB`;
}

function storedFile(file: Pick<JournalFile, "path" | "before" | "after" | "mode">): StoredFile {
  return {
    path: file.path,
    before: file.before?.toString("base64") ?? null,
    after: file.after?.toString("base64") ?? null,
    ...(file.mode === undefined ? {} : { mode: file.mode }),
  };
}

function loadedFile(file: StoredFile): Pick<JournalFile, "path" | "before" | "after" | "mode"> {
  return {
    path: file.path,
    before: file.before === null ? null : Buffer.from(file.before, "base64"),
    after: file.after === null ? null : Buffer.from(file.after, "base64"),
    ...(file.mode === undefined ? {} : { mode: file.mode }),
  };
}
