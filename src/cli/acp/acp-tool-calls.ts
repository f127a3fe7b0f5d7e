import path from "node:path";
import type { ToolCallContent, ToolCallLocation, ToolKind } from "@agentclientprotocol/sdk";
import { type PatchPreviewFile, previewPatch } from "../../client-core/streaming-patch.js";
import type { DiffLine, FileDiff, ThreadItem } from "../../protocol/agent.js";

/**
 * How Spark's tool calls look to an ACP client: kind, title, locations and content. Pure; the
 * arguments are the model's (untrusted, maybe partial) JSON text, so nothing here throws on them.
 */

type ToolCallItem = Extract<ThreadItem, { type: "tool_call" }>;

/** The ACP kind of a Spark tool (MCP tools and sub-agents are `other`). */
export function toolKind(name: string): ToolKind {
  switch (name) {
    case "read_file":
      return "read";
    case "list_dir":
    case "search":
      return "search";
    case "apply_patch":
      return "edit";
    case "shell":
      return "execute";
    default:
      return "other";
  }
}

/** A one-line title: what the call does, as far as its arguments say so far. */
export function toolTitle(name: string, argumentsJson: string): string {
  const args = parsedArguments(argumentsJson);
  const text = (key: string) => (typeof args?.[key] === "string" ? (args[key] as string) : null);
  switch (name) {
    case "read_file":
      return text("path") ? `Read ${text("path")}` : "Read a file";
    case "list_dir":
      return `List ${text("path") ?? "."}`;
    case "search":
      return text("pattern") ? `Search for ${text("pattern")}` : "Search";
    case "shell":
      return text("command") ? `$ ${oneLine(text("command")!)}` : "Run a command";
    case "apply_patch":
      return patchTitle(patchFiles(argumentsJson));
    case "delegate":
      return text("task") ? `Delegate: ${oneLine(text("task")!)}` : "Delegate a task";
    default: {
      // An MCP tool, `mcp__SERVER__TOOL`, titled as its permission question is (approvalTitle): the
      // same call must not change names between the question and its updates.
      const mcp = /^mcp__(.+?)__(.+)$/.exec(name);
      return mcp ? `${mcp[1]} · ${mcp[2]}` : name;
    }
  }
}

/** The files a call reads or writes, as absolute paths under `root` (for "follow the agent"). */
export function toolLocations(name: string, argumentsJson: string, root: string): ToolCallLocation[] {
  if (name === "apply_patch") return patchLocations(patchFiles(argumentsJson), root);
  if (name !== "read_file") return [];
  const args = parsedArguments(argumentsJson);
  if (typeof args?.path !== "string") return [];
  const line = typeof args.start_line === "number" ? { line: args.start_line } : {};
  return [{ path: inside(root, args.path), ...line }];
}

/** The title of an `apply_patch` call whose patch shows `files` so far. */
export function patchTitle(files: readonly PatchPreviewFile[]): string {
  return files.length > 0 ? `Edit ${files.map((file) => file.path).join(", ")}` : "Edit files";
}

/** The files an `apply_patch` call writes so far, as absolute paths under `root`. */
export function patchLocations(files: readonly PatchPreviewFile[], root: string): ToolCallLocation[] {
  return files.map((file) => ({ path: inside(root, file.path) }));
}

/** The diffs of an `apply_patch` call while the model writes it (whole lines only). */
export function streamingContent(item: ToolCallItem, root: string): ToolCallContent[] {
  if (item.name !== "apply_patch") return [];
  return patchPreviewContent(previewPatch(item.arguments)?.files ?? [], root);
}

/** The diffs of a patch preview's files (see IncrementalPatchPreview). */
export function patchPreviewContent(files: readonly PatchPreviewFile[], root: string): ToolCallContent[] {
  // A file whose first line is not written yet has nothing to show.
  return files
    .filter((file) => file.hunks.some((hunk) => hunk.lines.length > 0))
    .map((file) => previewDiff(file, root));
}

/** What a finished call shows: its diffs (a patch) or its output (anything else). */
export function finishedContent(item: ToolCallItem, root: string): ToolCallContent[] {
  const display = item.display;
  if (display?.kind === "diff") {
    const diffs: ToolCallContent[] = display.files.map((file) => appliedDiff(file, root));
    const problems = (display.diagnostics ?? []).map((d) => `${d.path}:${d.line}:${d.column}: ${d.message}`);
    if (problems.length > 0) diffs.push(textContent(`Errors this edit introduced:\n${problems.join("\n")}`));
    return diffs;
  }
  if (display?.kind === "command") {
    return [
      textContent(
        `$ ${display.command}\n${display.output}${display.exitCode === null ? "" : `\n(exit code ${display.exitCode})`}`,
      ),
    ];
  }
  return item.output ? [textContent(item.output)] : [];
}

export function textContent(text: string): ToolCallContent {
  return { type: "content", content: { type: "text", text } };
}

/** The patch's files as far as they are written. */
function patchFiles(argumentsJson: string): PatchPreviewFile[] {
  return previewPatch(argumentsJson)?.files ?? [];
}

function previewDiff(file: PatchPreviewFile, root: string): ToolCallContent {
  const lines = file.hunks.flatMap((hunk) => hunk.lines);
  return diffOf(inside(root, file.path), file.kind, lines);
}

function appliedDiff(file: FileDiff, root: string): ToolCallContent {
  return diffOf(
    inside(root, file.path),
    file.kind,
    file.hunks.flatMap((hunk) => hunk.lines),
  );
}

/**
 * ACP diffs are old and new text; Spark's are hunks. The texts are the hunks' lines (context and
 * removed lines, context and added lines), which a client diffs back into the same change.
 */
function diffOf(file: string, kind: FileDiff["kind"], lines: DiffLine[]): ToolCallContent {
  const side = (keep: DiffLine["kind"]) =>
    lines
      .filter((line) => line.kind === "context" || line.kind === keep)
      .map((line) => `${line.text}\n`)
      .join("");
  return {
    type: "diff",
    path: file,
    oldText: kind === "add" ? null : side("remove"),
    newText: kind === "delete" ? "" : side("add"),
  };
}

function inside(root: string, relative: string): string {
  return path.resolve(root, relative);
}

function parsedArguments(argumentsJson: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(argumentsJson);
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function oneLine(text: string): string {
  const first = text.split("\n")[0]!;
  return first.length > 120 || text.includes("\n") ? `${first.slice(0, 120)}…` : first;
}

/** The call's arguments as JSON when they parse, else as the text written. */
export function argumentsValue(argumentsJson: string): unknown {
  try {
    return JSON.parse(argumentsJson);
  } catch {
    return argumentsJson;
  }
}
