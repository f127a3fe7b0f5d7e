import { z } from "zod";
import { type EditedFile, formatReport } from "../diagnostics/edit-diagnostics.js";
import type { FileDiff } from "../diff.js";
import type { Workspace } from "../workspace.js";
import { readBounded } from "./internal/bounded-read.js";
import { parsePatch } from "./patch-parser.js";
import { type FileChange, type PatchFileReader, planPatch } from "./patch-planner.js";
import { applyChanges, PATCH_MAX_FILE_BYTES } from "./patch-writer.js";
import { beginWriting, parametersOf, type Tool, ToolError, type ToolResult } from "./tool.js";

export { PATCH_MAX_FILE_BYTES } from "./patch-writer.js";

const description = `Edit files with a patch; either all of it applies or nothing does. Format:

*** Begin Patch
*** Update File: src/app.ts
@@ function start() {
   const port = 8080;
-  listen(port);
+  listen(port, host);
   log("ready");
*** Add File: src/host.ts
+export const host = "localhost";
*** Delete File: src/old.ts
*** End Patch

Hunk lines start with " " (context, copied exactly), "-" (remove) or "+" (add); about 3 context \
lines around each change; hunks in file order. "@@ text" names a line above the hunk (like its \
function) to place it. "*** Move to: <path>" after "*** Update File:" renames. If rejected, read the \
file again and retry.`;

const schema = z.strictObject({
  patch: z.string().min(1).describe('The whole patch, from "*** Begin Patch" to "*** End Patch".'),
});

export const applyPatchTool: Tool<z.infer<typeof schema>> = {
  name: "apply_patch",
  description,
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    const patch = parsePatch(args.patch);
    const changes = await planPatch(patch, readerFor(ctx.workspace));
    // An interrupt before the first write applies nothing; one after it lets the patch finish and
    // reports it, so the item shows the diff that undo and code rewinds take back.
    const diffs = await applyChanges(changes, ctx.workspace, ctx.journal, {
      beforeFirstWrite: () => beginWriting(ctx),
    });
    const summaries = diffs.map(summary).join("\n");
    const applied: ToolResult = {
      output: summaries,
      isError: false,
      display: { kind: "diff", files: diffs },
    };
    const diagnostics = ctx.diagnostics;
    if (!diagnostics) return applied;
    // An interrupted turn ends at once: its applied patch is reported unchecked.
    const report = await untilAborted(
      ctx.signal,
      editedFiles(changes, ctx.workspace).then((files) => diagnostics.check(files)),
    );
    if (report === null) return applied;
    const checked = formatReport(report);
    return {
      output: checked ? `${summaries}\n${checked}` : summaries,
      isError: false,
      display: {
        kind: "diff",
        files: diffs,
        ...(report.diagnostics.length > 0 ? { diagnostics: report.diagnostics } : {}),
        ...(report.notices.length > 0 ? { diagnosticsNotices: report.notices } : {}),
      },
    };
  },
};

/** `work`'s value, or null as soon as `signal` aborts (the work goes on unawaited). */
function untilAborted<T>(signal: AbortSignal, work: Promise<T>): Promise<T | null> {
  if (signal.aborted) return Promise.resolve(null);
  let onAbort = () => {};
  const abortion = new Promise<null>((resolve) => {
    onAbort = () => resolve(null);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([work, abortion]).finally(() => signal.removeEventListener("abort", onAbort));
}

/** The files a patch wrote, as the language servers check them (deleted ones are not). */
async function editedFiles(changes: readonly FileChange[], workspace: Workspace): Promise<EditedFile[]> {
  const files: EditedFile[] = [];
  for (const change of changes) {
    if (change.after === null) continue;
    const path = change.moveTo ?? change.path;
    files.push({
      path,
      absolute: await workspace.resolve(path),
      before: change.before?.toString("utf8") ?? null,
      after: change.after.toString("utf8"),
    });
  }
  return files;
}

/** One line per file: `Updated src/a.ts (+2 -1)`. */
function summary(diff: FileDiff): string {
  const counts = `(+${diff.added} -${diff.removed})`;
  switch (diff.kind) {
    case "add":
      return `Added ${diff.path} ${counts}`;
    case "update":
      return `Updated ${diff.path} ${counts}`;
    case "delete":
      return `Deleted ${diff.path} ${counts}`;
    case "move":
      return `Moved ${diff.from} to ${diff.path} ${counts}`;
    default: {
      const unknown: never = diff.kind;
      throw new Error(`Unknown diff kind: ${String(unknown)}`);
    }
  }
}

function readerFor(workspace: Workspace): PatchFileReader {
  return async (path) => {
    const absolute = await workspace.resolve(path);
    let read: Awaited<ReturnType<typeof readBounded>>;
    try {
      read = await readBounded(absolute, PATCH_MAX_FILE_BYTES);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
    switch (read.kind) {
      case "content":
        return read.content;
      case "not_file":
        throw new ToolError(
          "invalid_arguments",
          `${path} is not a regular file; a patch can only change files.`,
        );
      case "too_large":
        throw new ToolError(
          "not_allowed",
          `${path} is ${read.size} bytes, over apply_patch's ${PATCH_MAX_FILE_BYTES / 1024 / 1024} MiB limit; ` +
            "it cannot be edited with a patch.",
        );
      default: {
        const unknown: never = read;
        throw new Error(`Unknown read result: ${JSON.stringify(unknown)}`);
      }
    }
  };
}
