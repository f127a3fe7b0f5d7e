import { constants } from "node:fs";
import { open, stat } from "node:fs/promises";
import { ToolError } from "../tools/tool-error.js";
import type { Workspace } from "../workspace.js";

/** Bytes of one mentioned file attached to the message: the first 64 KiB. */
export const MAX_MENTION_BYTES = 64 * 1024;
/** Files one message may attach; mentions past this are named in a notice and not attached. */
export const MAX_MENTIONED_FILES = 8;

/** What the mentions of one message came to. */
export interface ExpandedMentions {
  /** Appended to the message the model gets: each file as a fenced block ("" when none). */
  attachments: string;
  /** One line per mention not attached (outside the workspace, protected, missing, binary, ...). */
  notices: string[];
}

/**
 * The `@path` mentions in `text`, in order and each once: `@` at the start or after whitespace or
 * an opening bracket, then the path up to whitespace. Trailing punctuation (`@a.ts,`) is kept as an
 * alternative spelling: `candidates` holds the path as written, then without it.
 */
export function findMentions(text: string): { written: string; candidates: string[] }[] {
  const found = new Map<string, string[]>();
  for (const match of text.matchAll(/(?<=^|[\s([{])@(\S+)/g)) {
    const written = match[1]!;
    const trimmed = written.replace(/[.,;:!?)\]}"'`]+$/, "");
    const candidates = trimmed !== "" && trimmed !== written ? [written, trimmed] : [written];
    if (!found.has(written)) found.set(written, candidates);
  }
  return [...found].map(([written, candidates]) => ({ written, candidates }));
}

/**
 * Reads the files `text` mentions (`@src/parser.ts`) for the model: each a file inside the workspace
 * (resolved by {@link Workspace.resolve}, so `..`, absolute paths elsewhere, symlinks out and
 * `.git`/`.spark` are refused), its first {@link MAX_MENTION_BYTES} bytes as a fenced block with a
 * note when cut, at most {@link MAX_MENTIONED_FILES} files. A mention that is not attached is named
 * in a notice, and the model is told too; a word without `/` or `.` that names no file (`@alice`)
 * is not taken for a path.
 */
export async function expandMentions(text: string, workspace: Workspace): Promise<ExpandedMentions> {
  const blocks: string[] = [];
  const notices: string[] = [];
  const attached = new Set<string>();
  for (const mention of findMentions(text)) {
    const outcome = await readMention(mention.candidates, workspace);
    if (outcome === null) continue;
    if ("refused" in outcome) {
      notices.push(`@${mention.written} not attached: ${outcome.refused}`);
      continue;
    }
    if (attached.has(outcome.real)) continue;
    if (attached.size >= MAX_MENTIONED_FILES) {
      notices.push(
        `@${mention.written} not attached: a message attaches ${MAX_MENTIONED_FILES} files at most.`,
      );
      continue;
    }
    attached.add(outcome.real);
    blocks.push(fencedFile(outcome.path, outcome.content, outcome.size));
  }
  const lines = [...blocks, ...notices.map((notice) => `(${notice})`)];
  return { attachments: lines.length === 0 ? "" : `\n\n${lines.join("\n\n")}`, notices };
}

type MentionOutcome =
  | { path: string; real: string; content: string; size: number }
  | { refused: string }
  /** Not a path (no such file, and it does not look like one): left alone. */
  | null;

async function readMention(candidates: readonly string[], workspace: Workspace): Promise<MentionOutcome> {
  let firstRefusal: { refused: string } | null = null;
  for (const path of candidates) {
    const outcome = await readOne(path, workspace);
    if (outcome === "missing") continue;
    if ("refused" in outcome) {
      firstRefusal ??= outcome;
      continue;
    }
    return outcome;
  }
  if (firstRefusal) return firstRefusal;
  const looksLikePath = candidates.some((path) => /[/.]/.test(path));
  return looksLikePath ? { refused: "no such file in the workspace." } : null;
}

async function readOne(
  path: string,
  workspace: Workspace,
): Promise<{ path: string; real: string; content: string; size: number } | { refused: string } | "missing"> {
  let real: string;
  try {
    real = await workspace.resolve(path);
  } catch (error) {
    if (error instanceof ToolError && error.code === "path_outside_workspace")
      return { refused: "outside the workspace (only files inside it are attached)." };
    if (error instanceof ToolError && error.code === "path_protected")
      return { refused: "inside .git or .spark, which are off limits." };
    return { refused: error instanceof Error ? error.message : String(error) };
  }
  let size: number;
  try {
    const info = await stat(real);
    if (info.isDirectory()) return { refused: "a folder; mention the files in it." };
    if (!info.isFile()) return { refused: "not a regular file." };
    size = info.size;
  } catch {
    return "missing";
  }
  let handle: import("node:fs/promises").FileHandle;
  try {
    // Not through a symlink put there since the path was resolved.
    handle = await open(real, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (error) {
    return { refused: `cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"}).` };
  }
  try {
    const buffer = Buffer.alloc(Math.min(size, MAX_MENTION_BYTES));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const bytes = buffer.subarray(0, bytesRead);
    if (bytes.includes(0)) return { refused: "a binary file." };
    return { path: workspace.relative(real), real, content: bytes.toString("utf8"), size };
  } finally {
    await handle.close();
  }
}

/** The file as a fenced block whose fence no run of backticks in it can close. */
function fencedFile(path: string, content: string, size: number): string {
  const longest = Math.max(0, ...[...content.matchAll(/`+/g)].map((run) => run[0].length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  const cut = size > MAX_MENTION_BYTES;
  const heading = cut
    ? `File ${path} (mentioned; its first ${MAX_MENTION_BYTES.toLocaleString("en-US")} of ${size.toLocaleString("en-US")} bytes):`
    : `File ${path} (mentioned):`;
  const body = content.endsWith("\n") || content === "" ? content : `${content}\n`;
  return `${heading}\n${fence}\n${body}${fence}${cut ? `\n(The file is cut here: read_file reads the rest.)` : ""}`;
}
