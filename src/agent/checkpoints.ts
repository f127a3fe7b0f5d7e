import { appendFile, mkdir, readFile, stat } from "node:fs/promises";
import { dirname, isAbsolute, relative } from "node:path";
import { SparkError } from "../protocol/errors.js";
import { type JournalEntry, type JournalFile, restore } from "./edit-journal.js";
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
}

/** One edit (one apply_patch call) made during the turn started by user message `turn`. */
interface CheckpointEdit {
  seq: number;
  turn: string;
  files: Pick<JournalFile, "path" | "before" | "after" | "mode">[];
  /** The journal's entry, while this process has it (so undo no longer offers a rewound edit). */
  entry?: JournalEntry;
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
 * transcript (`<thread>.checkpoints`), so a resumed session can rewind too; in memory only without
 * a file.
 */
export class Checkpoints {
  private readonly edits: CheckpointEdit[] = [];
  private readonly unrewindable = new Map<string, string>();
  private seq = 0;
  private queue: Promise<void> = Promise.resolve();
  private readonly maxTurnBytes: number;
  private readonly maxSessionBytes: number;
  private readonly name: (path: string) => string;

  private constructor(
    private file: string | null,
    options: CheckpointsOptions,
  ) {
    this.maxTurnBytes = options.maxTurnBytes ?? MAX_CHECKPOINT_TURN_BYTES;
    this.maxSessionBytes = options.maxSessionBytes ?? MAX_CHECKPOINT_SESSION_BYTES;
    this.name = options.name ?? ((path) => path);
  }

  /** Checkpoints kept in memory only. */
  static inMemory(options: CheckpointsOptions = {}): Checkpoints {
    return new Checkpoints(null, options);
  }

  /**
   * Checkpoints kept in `file`, with what it holds already (a resumed session). A file larger than
   * the session bound allows (base64 and JSON around it) is not read: the earlier turns cannot be
   * rewound for code then.
   */
  static async open(file: string, options: CheckpointsOptions = {}): Promise<Checkpoints> {
    const checkpoints = new Checkpoints(file, options);
    const { root } = options;
    const outside = (path: string) =>
      root !== undefined &&
      (!isAbsolute(path) || relative(root, path).startsWith("..") || isAbsolute(relative(root, path)));
    const size = await stat(file).then(
      (stats) => stats.size,
      () => 0,
    );
    if (size === 0 || size > checkpoints.maxSessionBytes * 2) return checkpoints;
    for (const line of (await readFile(file, "utf8")).split("\n")) {
      if (!line.trim()) continue;
      try {
        const record = JSON.parse(line) as CheckpointRecord;
        if (record.kind === "edit" && record.files.some((stored) => outside(stored.path))) {
          const reason = "its checkpoint names a file outside the workspace";
          checkpoints.apply({ kind: "unrewindable", turn: record.turn, reason });
        } else checkpoints.apply(record);
      } catch {
        // a line cut short by a crash
      }
    }
    return checkpoints;
  }

  /** Keeps the records from now on in `file` (a new session's, named once its thread has an id). */
  storeIn(file: string): void {
    this.file = file;
  }

  /** Bytes of file content kept. */
  get bytes(): number {
    return this.edits.reduce((sum, edit) => sum + editBytes(edit.files), 0);
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
      this.write({ kind: "unrewindable", turn, reason });
      this.apply({ kind: "unrewindable", turn, reason });
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
   * since), and when one of the turns was over the bounds. Returns the restored paths and the
   * journal entries they came from.
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
    const files = new Map<
      string,
      { path: string; before: Buffer | null; after: Buffer | null; mode?: number }
    >();
    for (const edit of edits) {
      for (const file of edit.files) {
        const known = files.get(file.path);
        if (known) known.after = file.after;
        else files.set(file.path, { ...file });
      }
    }
    for (const file of files.values()) {
      const current = await readIfExists(file.path);
      const unchanged = current === null ? file.after === null : file.after?.equals(current) === true;
      if (!unchanged) {
        throw new SparkError(
          "invalid_request",
          `${this.name(file.path)} changed since the agent edited it; nothing was restored and every file was left as it is.`,
          { param: "item_id", status: 409 },
        );
      }
    }
    try {
      await restore([...files.values()]);
    } catch (error) {
      throw new SparkError(
        "server_error",
        `Restoring failed, nothing was changed: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
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

  /** Resolves when every record so far is on disk. */
  flush(): Promise<void> {
    return this.queue;
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
    const file = this.file;
    if (!file) return;
    const line = `${JSON.stringify(record)}\n`;
    // A failed write loses rewinding after a resume, never the session: it is not retried.
    this.queue = this.queue.then(() =>
      mkdir(dirname(file), { recursive: true })
        .then(() => appendFile(file, line, { mode: 0o600 }))
        .catch(() => {}),
    );
  }
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
