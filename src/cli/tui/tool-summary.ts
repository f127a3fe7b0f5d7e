import { previewPatch } from "../../client-core/streaming-patch.js";
import type { FileDiff, ThreadItem } from "../../protocol/agent.js";

export type ToolCallItem = Extract<ThreadItem, { type: "tool_call" }>;

/** Longest summary argument shown before it is cut with an ellipsis. */
const MAX_ARGUMENT_CHARS = 80;

export interface SummaryOptions {
  /** Name each file of a diff with its kind and line counts. Default: true. */
  diffCounts?: boolean;
}

/**
 * One line naming what a tool call does: `read_file src/a.ts:10-20`, `search "foo" in src`,
 * `$ npm test`, `apply_patch src/a.ts (+3 -1)` (the files named so far while the call streams). Tools it does not know show their name and their
 * arguments, cut short. Never throws, whatever the model sent as arguments.
 */
export function summarizeToolCall(
  item: Pick<ToolCallItem, "name" | "arguments" | "display">,
  options: SummaryOptions = {},
): string {
  const args = parseArguments(item.arguments);
  const display = item.display;
  if (display?.kind === "diff") {
    const files = display.files.map((file) => (options.diffCounts === false ? file.path : fileLabel(file)));
    return `${item.name} ${files.join(", ")}`.trimEnd();
  }
  if (display?.kind === "command") return `$ ${cut(oneLine(display.command))}`;
  const path = stringField(args, "path");
  switch (item.name) {
    case "read_file": {
      const start = numberField(args, "start_line");
      const end = numberField(args, "end_line");
      const range = start !== null || end !== null ? `:${start ?? 1}-${end ?? ""}` : "";
      return `read_file ${path ?? "?"}${range}`;
    }
    case "list_dir":
      return `list_dir ${path ?? "."}`;
    case "search": {
      const pattern = stringField(args, "pattern") ?? stringField(args, "query") ?? "";
      const regex = args?.regex === true ? " (regex)" : "";
      return `search ${JSON.stringify(cut(oneLine(pattern)))}${regex}${path && path !== "." ? ` in ${path}` : ""}`;
    }
    case "shell": {
      const command = commandField(args);
      // Arguments without a command (a small model's `{"cmd_line": ...}`) are shown as sent.
      return command === null
        ? `shell ${cut(oneLine(item.arguments.trim()))}`.trimEnd()
        : `$ ${cut(oneLine(command))}`;
    }
    case "apply_patch": {
      // The files named so far, while the model still writes the call.
      const files = previewPatch(item.arguments)?.files ?? [];
      return `apply_patch ${files.map((file) => file.path).join(", ")}`.trimEnd();
    }
    default: {
      const shown = args === null ? item.arguments.trim() : (path ?? JSON.stringify(args));
      return `${item.name} ${cut(oneLine(shown))}`.trimEnd();
    }
  }
}

/** `src/a.ts (+3 -1)`, `old.ts -> new.ts (+0 -0)`, `new.ts (new, +12)`. */
export function fileLabel(file: FileDiff): string {
  const name = file.kind === "move" && file.from ? `${file.from} -> ${file.path}` : file.path;
  const kind = file.kind === "add" ? "new, " : file.kind === "delete" ? "deleted, " : "";
  return `${name} (${kind}+${file.added} -${file.removed})`;
}

/** The first line of a tool's error output, for a failed call's one-line reason. */
export function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

function parseArguments(json: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(json);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function stringField(args: Record<string, unknown> | null, name: string): string | null {
  const value = args?.[name];
  return typeof value === "string" ? value : null;
}

function numberField(args: Record<string, unknown> | null, name: string): number | null {
  const value = args?.[name];
  return typeof value === "number" ? value : null;
}

/** A shell command given as a string or an argv array. */
function commandField(args: Record<string, unknown> | null): string | null {
  const value = args?.command ?? args?.cmd;
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((part) => typeof part === "string")) return value.join(" ");
  return null;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, " ").trim();
}

function cut(text: string): string {
  return text.length > MAX_ARGUMENT_CHARS ? `${text.slice(0, MAX_ARGUMENT_CHARS - 3)}...` : text;
}
