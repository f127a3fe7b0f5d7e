import { unlink } from "node:fs/promises";
import {
  commitStaged,
  discardStaged,
  readIfExists,
  type StagedFile,
  stageFile,
} from "./tools/internal/atomic-write.js";
import { ToolError } from "./tools/tool-error.js";

/** One file of a recorded edit. `null` content means the file did not exist on that side. */
export interface JournalFile {
  /** Absolute path. */
  path: string;
  before: Buffer | null;
  after: Buffer | null;
  /** Permission bits of the file before the edit, restored by undo. Default: the process default. */
  mode?: number;
  /** Set once the person accepted this file's change; it can then no longer be rejected alone. */
  accepted?: true;
}

/** Everything one edit (one apply_patch call) changed. */
export interface JournalEntry {
  /** The tool call that made the edit, when known; names it for per-file review. */
  id?: string;
  files: JournalFile[];
}

export interface EditJournalOptions {
  /** Edits kept for undo; the oldest is forgotten first. Default: 100. */
  capacity?: number;
}

/** Told of every edit recorded and of every file an undo or reject restored (the turn checkpoints). */
export interface JournalListener {
  recorded(entry: JournalEntry): void;
  restored(entry: JournalEntry, files: readonly JournalFile[]): void;
}

/** The agent's edits, newest last, so the person can take them back one at a time. */
export class EditJournal {
  private readonly entries: JournalEntry[] = [];
  private readonly capacity: number;
  private listener: JournalListener | null = null;

  constructor(options: EditJournalOptions = {}) {
    this.capacity = Math.max(1, options.capacity ?? 100);
  }

  /** Sets the one listener told of every change (see JournalListener). */
  listen(listener: JournalListener): void {
    this.listener = listener;
  }

  record(entry: JournalEntry): void {
    this.listener?.recorded(entry);
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
  }

  /** Forgets these edits (a rewind restored their files): undo no longer offers them. */
  discard(entries: readonly JournalEntry[]): void {
    for (const entry of entries) {
      const index = this.entries.indexOf(entry);
      if (index !== -1) this.entries.splice(index, 1);
    }
  }

  get canUndo(): boolean {
    return this.entries.length > 0;
  }

  /** Recorded edits available to undo. */
  get size(): number {
    return this.entries.length;
  }

  /** The newest recorded edit (to name it after the tool call that made it). */
  get newest(): JournalEntry | undefined {
    return this.entries.at(-1);
  }

  /**
   * Marks the files at `paths` of edit `id` as accepted: kept, and no longer revertible one by one
   * (undo still reverts the whole edit). Throws a ToolError `not_found` when the edit or a file is
   * not (or no longer) recorded: already rejected, undone, or too old.
   */
  accept(id: string, paths: readonly string[]): void {
    for (const file of this.filesOf(id, paths)) file.accepted = true;
  }

  /**
   * Restores the files at `paths` of edit `id` to their content from before that edit (a file the
   * edit created is deleted, one it deleted comes back), and forgets them, so undo no longer
   * touches them. Refused with a ToolError `patch_rejected` when a file changed since the edit, and
   * `not_allowed` when it was accepted. Like undo, all contents are staged before any file changes.
   */
  async revert(id: string, paths: readonly string[]): Promise<{ paths: string[] }> {
    const files = this.filesOf(id, paths);
    if (files.some((file) => file.accepted)) {
      throw new ToolError("not_allowed", "That change was accepted; undo reverts the whole patch.");
    }
    await assertUnchangedSincePatch(files);
    // Taken out at once, so a concurrent undo or revert cannot restore the same files twice.
    const entry = this.entries.find((candidate) => candidate.id === id)!;
    entry.files = entry.files.filter((file) => !files.includes(file));
    if (entry.files.length === 0) this.entries.splice(this.entries.indexOf(entry), 1);
    try {
      await restore(files);
    } catch (error) {
      entry.files.push(...files);
      this.keepUnrestored(entry, files, error);
      if (!this.entries.includes(entry)) this.entries.push(entry);
      throw error;
    }
    this.listener?.restored(entry, files);
    return { paths: files.map((file) => file.path) };
  }

  /**
   * After a restore of `files` of `entry` failed: the files it did restore (a partial restore) are
   * taken out of the entry and reported to the listener as restored; the rest stay to try again.
   */
  private keepUnrestored(entry: JournalEntry, files: readonly JournalFile[], error: unknown): void {
    if (!(error instanceof PartialRestoreError)) return;
    const done = files.filter((file) => error.restored.includes(file.path));
    if (done.length === 0) return;
    entry.files = entry.files.filter((file) => !done.includes(file));
    this.listener?.restored(entry, done);
  }

  private filesOf(id: string, paths: readonly string[]): JournalFile[] {
    const entry = this.entries.find((candidate) => candidate.id === id);
    const files = entry?.files.filter((file) => paths.includes(file.path)) ?? [];
    if (files.length === 0) {
      throw new ToolError("not_found", "That change is no longer recorded (already reverted or too old).");
    }
    return files;
  }

  /**
   * Restores every file of the newest edit byte for byte: a file the edit created is deleted, one it
   * deleted comes back. All restored contents are staged before any file changes, so a failure
   * while writing leaves the files as they were and the edit still undoable. Throws a ToolError
   * `not_found` when there is nothing to undo, and `patch_rejected` (naming the file, touching none)
   * when any file changed since the edit: undo never overwrites the person's own later edits.
   */
  async undo(): Promise<{ id?: string; paths: string[] }> {
    // Taken off at once so a second concurrent undo takes the edit before this one.
    const entry = this.entries.pop();
    if (!entry) throw new ToolError("not_found", "Nothing to undo.");
    try {
      await assertUnchangedSincePatch(entry.files);
      await restore(entry.files);
    } catch (error) {
      this.keepUnrestored(entry, entry.files, error);
      this.entries.push(entry);
      throw error;
    }
    this.listener?.restored(entry, entry.files);
    return {
      ...(entry.id === undefined ? {} : { id: entry.id }),
      paths: entry.files.map((file) => file.path),
    };
  }
}

/** Throws a ToolError `patch_rejected` naming the first file whose content is no longer what the edit wrote. */
async function assertUnchangedSincePatch(files: readonly JournalFile[]): Promise<void> {
  for (const file of files) {
    const current = await readIfExists(file.path).catch((error: unknown) => {
      throw new ToolError(
        "failed",
        `Could not read ${file.path}, nothing was changed: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    });
    const unchanged = current === null ? file.after === null : file.after?.equals(current) === true;
    if (!unchanged) {
      throw new ToolError(
        "patch_rejected",
        `${file.path} changed since the patch was applied; nothing was restored and every file was left as it is.`,
      );
    }
  }
}

/** One file a restore could not put back, and why. */
export interface RestoreFailure {
  path: string;
  error: Error;
}

/**
 * A restore that changed some files and not others: `restored` are back as they were, `failed`
 * are as they were before the restore began. The message names both.
 */
export class PartialRestoreError extends ToolError {
  constructor(
    readonly restored: readonly string[],
    readonly failed: readonly RestoreFailure[],
  ) {
    super(
      "failed",
      describeRestore(restored, failed, (path) => path),
    );
    this.name = "PartialRestoreError";
  }
}

/** "Restored a, b; not restored c (EACCES: ...)." with each path as `name` writes it. */
export function describeRestore(
  restored: readonly string[],
  failed: readonly RestoreFailure[],
  name: (path: string) => string,
): string {
  const done = restored.length > 0 ? `restored ${restored.map(name).join(", ")}` : "restored no file";
  const notDone = failed.map((failure) => `${name(failure.path)} (${failure.error.message})`).join(", ");
  return `Restoring was cut short: ${done}; not restored: ${notDone}. The files not restored are as they were.`;
}

/**
 * Writes every file's `before` and deletes the files the edit created. Every content is staged
 * first, so a failure while staging changes nothing (a ToolError `failed` says so). Once staged,
 * every file is tried even when one fails, and a failure throws a {@link PartialRestoreError}
 * naming exactly which files were restored and which were not (and why).
 */
export async function restore(
  files: readonly Pick<JournalFile, "path" | "before" | "mode">[],
): Promise<void> {
  const staged: StagedFile[] = [];
  try {
    for (const file of files) {
      if (file.before === null) continue;
      staged.push(await stageFile(file.path, file.before, { mode: file.mode, createParents: true }));
    }
  } catch (error) {
    await discardStaged(staged);
    throw new ToolError("failed", `Restoring failed, nothing was changed: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const restored: string[] = [];
  const failed: RestoreFailure[] = [];
  for (const file of staged) {
    try {
      await commitStaged(file);
      restored.push(file.path);
    } catch (error) {
      failed.push({ path: file.path, error: error as Error });
      await discardStaged([file]);
    }
  }
  for (const file of files) {
    if (file.before !== null) continue;
    try {
      await unlink(file.path).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "ENOENT") throw error;
      });
      restored.push(file.path);
    } catch (error) {
      failed.push({ path: file.path, error: error as Error });
    }
  }
  if (failed.length > 0) throw new PartialRestoreError(restored, failed);
}
