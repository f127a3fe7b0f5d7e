import type { PatchResolution, ThreadItem } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import type { EditJournal } from "./edit-journal.js";
import { ToolError } from "./tools/tool-error.js";
import type { Workspace } from "./workspace.js";

/** Review of the patches a thread applied: undo the last, or accept or reject each file. */
export class PatchReview {
  constructor(
    private readonly options: {
      journal: EditJournal;
      workspace: Workspace;
      /** The thread's items, where each patch's tool call and its diff are found. */
      items: readonly ThreadItem[];
    },
  ) {}

  /**
   * Reverts the last applied patch byte for byte: the tool call that applied it (null if unknown)
   * and the files restored, relative to the workspace; null when there is nothing to undo.
   */
  async undoPatch(): Promise<{ itemId: string | null; paths: string[] } | null> {
    const { journal, workspace } = this.options;
    if (!journal.canUndo) return null;
    const { id, paths } = await journal.undo().catch((error: unknown) => {
      throw patchError(error, null);
    });
    return { itemId: id ?? null, paths: paths.map((p) => workspace.relative(p)) };
  }

  /**
   * Settles one file of the patch applied by tool call `itemId` (`path` as in its FileDiff; a move
   * covers both its paths): accepted keeps it; rejected restores the content from before that
   * patch, refused when the file changed since. Throws a SparkError.
   */
  async resolvePatchFile(itemId: string, path: string, resolution: PatchResolution): Promise<void> {
    const { journal, workspace, items } = this.options;
    const item = items.find((candidate) => candidate.type === "tool_call" && candidate.id === itemId);
    const display = item?.type === "tool_call" ? item.display : undefined;
    const diff = display?.kind === "diff" ? display.files.find((file) => file.path === path) : undefined;
    if (!diff) {
      throw new SparkError("not_found", `No patch of ${path} by ${itemId} in this thread.`, {
        param: "path",
      });
    }
    try {
      const paths = await Promise.all(
        [diff.path, ...(diff.from === undefined ? [] : [diff.from])].map((p) => workspace.resolve(p)),
      );
      if (resolution === "accepted") journal.accept(itemId, paths);
      else await journal.revert(itemId, paths);
    } catch (error) {
      throw patchError(error, "path");
    }
  }
}

/** A journal's ToolError as the SparkError a client gets (409 when the files are in the way). */
function patchError(error: unknown, param: string | null): unknown {
  if (!(error instanceof ToolError)) return error;
  const conflict = error.code === "patch_rejected" || error.code === "not_allowed";
  return new SparkError(error.code === "not_found" ? "not_found" : "invalid_request", error.message, {
    param,
    ...(conflict ? { status: 409 } : {}),
    cause: error,
  });
}
