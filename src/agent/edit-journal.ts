import { rm } from "node:fs/promises";
import { commitStaged, discardStaged, type StagedFile, stageFile } from "./tools/internal/atomic-write.js";
import { ToolError } from "./tools/tool-error.js";

/** One file of a recorded edit. `null` content means the file did not exist on that side. */
export interface JournalFile {
  /** Absolute path. */
  path: string;
  before: Buffer | null;
  after: Buffer | null;
  /** Permission bits of the file before the edit, restored by undo. Default: the process default. */
  mode?: number;
}

/** Everything one edit (one apply_patch call) changed. */
export interface JournalEntry {
  files: JournalFile[];
}

export interface EditJournalOptions {
  /** Edits kept for undo; the oldest is forgotten first. Default: 100. */
  capacity?: number;
}

/** The agent's edits, newest last, so the person can take them back one at a time. */
export class EditJournal {
  private readonly entries: JournalEntry[] = [];
  private readonly capacity: number;

  constructor(options: EditJournalOptions = {}) {
    this.capacity = Math.max(1, options.capacity ?? 100);
  }

  record(entry: JournalEntry): void {
    this.entries.push(entry);
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
  }

  get canUndo(): boolean {
    return this.entries.length > 0;
  }

  /** Recorded edits available to undo. */
  get size(): number {
    return this.entries.length;
  }

  /**
   * Restores every file of the newest edit byte for byte: a file the edit created is deleted, one it
   * deleted comes back. All restored contents are staged before any file changes, so a failure
   * while writing leaves the files as they were and the edit still undoable. Throws a ToolError
   * `not_found` when there is nothing to undo.
   */
  async undo(): Promise<{ paths: string[] }> {
    // Taken off at once so a second concurrent undo takes the edit before this one.
    const entry = this.entries.pop();
    if (!entry) throw new ToolError("not_found", "Nothing to undo.");
    const staged: StagedFile[] = [];
    try {
      for (const file of entry.files) {
        if (file.before === null) continue;
        staged.push(await stageFile(file.path, file.before, { mode: file.mode, createParents: true }));
      }
    } catch (error) {
      await discardStaged(staged);
      this.entries.push(entry);
      throw new ToolError("failed", `Undo failed, nothing was changed: ${(error as Error).message}`, {
        cause: error,
      });
    }
    for (const file of staged) await commitStaged(file);
    for (const file of entry.files) {
      if (file.before === null) await rm(file.path, { force: true });
    }
    return { paths: entry.files.map((file) => file.path) };
  }
}
