import { rm, stat } from "node:fs/promises";
import { diffText, type FileDiff } from "../diff.js";
import type { EditJournal, JournalFile } from "../edit-journal.js";
import type { Workspace } from "../workspace.js";
import { commitStaged, discardStaged, type StagedFile, stageFile } from "./internal/atomic-write.js";
import { readBounded } from "./internal/bounded-read.js";
import type { FileChange } from "./patch-planner.js";
import { ToolError } from "./tool-error.js";

/** Larger files are not edited (nor read whole into memory) by apply_patch. */
export const PATCH_MAX_FILE_BYTES = 8 * 1024 * 1024;

interface ResolvedChange {
  change: FileChange;
  /** Real path of the file now (the source of a move). */
  source: string;
  /** Real path the new content goes to. */
  target: string;
  mode: number | undefined;
}

export interface ApplyChangesOptions {
  /**
   * Called once every check has passed, just before the first write (synchronously, so nothing
   * can slip in between). Throwing stops the patch with nothing written. Default: none.
   */
  beforeFirstWrite?: () => void;
}

/**
 * Writes planned changes and records them as one journal entry. Every path is resolved and every
 * file checked to still hold what was planned against before anything is written; new contents
 * are then staged beside their targets and renamed into place, so no file is ever half-written.
 * Returns the diff of each file, paths relative to the workspace.
 */
export async function applyChanges(
  changes: readonly FileChange[],
  workspace: Workspace,
  journal: EditJournal,
  options: ApplyChangesOptions = {},
): Promise<FileDiff[]> {
  const resolved: ResolvedChange[] = [];
  const claimed = new Map<string, string>();
  const claim = (real: string, named: string) => {
    const earlier = claimed.get(real);
    if (earlier !== undefined) {
      throw rejected(
        `${earlier} and ${named} are the same file; put all changes to one file in one section.`,
      );
    }
    claimed.set(real, named);
  };
  for (const change of changes) {
    const source = await workspace.resolve(change.path);
    claim(source, change.path);
    let target = source;
    if (change.moveTo !== undefined) {
      target = await workspace.resolve(change.moveTo);
      claim(target, change.moveTo);
    }
    resolved.push({ change, source, target, mode: undefined });
  }
  for (const entry of resolved) {
    const { change, source, target } = entry;
    const current = await currentContent(source);
    const unchanged =
      current === null ? change.before === null : change.before !== null && current.equals(change.before);
    if (!unchanged) {
      throw rejected(`${change.path} changed while the patch was being applied. Re-read it and try again.`);
    }
    if (target !== source && (await currentContent(target)) !== null) {
      throw rejected(`cannot move ${change.path} to ${change.moveTo}: the destination already exists.`);
    }
    if (current !== null) entry.mode = (await stat(source)).mode;
  }
  options.beforeFirstWrite?.();

  const staged: StagedFile[] = [];
  try {
    for (const { change, source, target, mode } of resolved) {
      if (change.after === null) continue;
      staged.push(
        await stageFile(target, change.after, {
          mode,
          createParents: change.before === null || target !== source,
        }),
      );
    }
  } catch (error) {
    await discardStaged(staged);
    throw new ToolError(
      "failed",
      `Could not write the patch, no files were changed: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }

  const journaled: JournalFile[] = [];
  try {
    for (const file of staged) {
      const entry = resolved.find((candidate) => candidate.target === file.path)!;
      await commitStaged(file);
      journaled.push({
        path: file.path,
        before: entry.source === file.path ? entry.change.before : null,
        after: entry.change.after,
        mode: entry.mode,
      });
    }
    for (const { change, source, target, mode } of resolved) {
      if (change.after !== null && source === target) continue;
      await rm(source, { force: true });
      journaled.push({ path: source, before: change.before, after: null, mode });
    }
  } catch (error) {
    await discardStaged(staged);
    throw new ToolError(
      "failed",
      `The patch was only partly applied (${journaled.length} file(s) written; undo restores them): ${(error as Error).message}`,
      { cause: error },
    );
  } finally {
    if (journaled.length > 0) journal.record({ files: journaled });
  }

  return resolved.map(({ change, source, target }) => {
    const diff = diffText(
      workspace.relative(target),
      change.before === null ? null : change.before.toString("utf8"),
      change.after === null ? null : change.after.toString("utf8"),
    );
    if (change.kind === "move") return { ...diff, kind: "move", from: workspace.relative(source) };
    return diff;
  });
}

/**
 * The file's bytes; null when it does not exist. Anything else at the path (a directory, a file
 * grown past the cap) is reported as empty content, which differs from any planned `before`.
 */
async function currentContent(path: string): Promise<Buffer | null> {
  try {
    const read = await readBounded(path, PATCH_MAX_FILE_BYTES);
    return read.kind === "content" ? read.content : Buffer.alloc(0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

function rejected(message: string): ToolError {
  return new ToolError("patch_rejected", `Patch rejected, no files were changed: ${message}`);
}
