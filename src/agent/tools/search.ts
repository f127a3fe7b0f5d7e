import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { looksBinary } from "./internal/binary.js";
import { listFiles } from "./internal/file-list.js";
import { statOrNotFound } from "./internal/stat-path.js";
import { parametersOf, type Tool, ToolError } from "./tool.js";

/** Characters of a matching line shown. */
const MAX_LINE_CHARS = 300;
/** Larger files are skipped (generated bundles, data dumps). */
const MAX_FILE_BYTES = 8 * 1024 * 1024;
/** Files read at once. */
const CONCURRENCY = 16;

const description = `Search the text files of the workspace for a pattern, line by line. Prints each \
match as "path:line: text". The pattern is plain text unless regex is true (JavaScript regular \
expression syntax, case-sensitive; use [Aa] or (?i:...) to ignore case). Files ignored by .gitignore, \
binary files, .git and node_modules are skipped. Narrow the search with path (a directory or a file).`;

const schema = z.strictObject({
  pattern: z.string().min(1).describe("Text to find, or a regular expression when regex is true."),
  regex: z.boolean().default(false).describe("Treat pattern as a regular expression. Default: false."),
  path: z
    .string()
    .optional()
    .describe('Directory or file to search, relative to the workspace root. Default: ".".'),
  max_results: z
    .number()
    .int()
    .min(1)
    .max(1000)
    .default(100)
    .describe("Most matching lines to return (1 to 1000). Default: 100."),
});

export const searchTool: Tool<z.infer<typeof schema>> = {
  name: "search",
  description,
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    const matches = matcherFor(args.pattern, args.regex);
    const absolute = await ctx.workspace.resolve(args.path ?? ".");
    const shown = ctx.workspace.relative(absolute);
    const stats = await statOrNotFound(absolute, shown);
    let files: string[];
    if (stats.isDirectory()) {
      const listing = await listFiles(absolute, { signal: ctx.signal });
      files = listing.files.map((file) => join(absolute, file));
    } else {
      files = [absolute];
    }

    const results: string[] = [];
    let skippedLarge = 0;
    let full = false;
    for (let at = 0; at < files.length && !full; at += CONCURRENCY) {
      ctx.signal.throwIfAborted();
      const batch = files.slice(at, at + CONCURRENCY);
      const contents = await Promise.all(batch.map((file) => readText(file)));
      for (const [i, content] of contents.entries()) {
        if (content === "large") skippedLarge++;
        if (typeof content === "string") continue;
        const path = ctx.workspace.relative(batch[i]!);
        for (const match of matchLines(content.text, matches)) {
          if (results.length >= args.max_results) {
            full = true;
            break;
          }
          results.push(`${path}:${match.line}: ${excerpt(match.text, match.index)}`);
        }
        if (full) break;
      }
    }

    const notes: string[] = [];
    if (full) {
      notes.push(
        `[Stopped after ${args.max_results} match${args.max_results === 1 ? "" : "es"}; narrow the pattern or path, or raise max_results (at most 1000).]`,
      );
    }
    if (skippedLarge > 0) {
      notes.push(`[Skipped ${skippedLarge} file(s) over ${MAX_FILE_BYTES / 1024 / 1024} MiB.]`);
    }
    if (results.length === 0) {
      const kind = args.regex ? "regex" : "text";
      const where = shown === "." ? "the workspace" : shown;
      return {
        output: [`No matches for ${kind} ${JSON.stringify(args.pattern)} in ${where}.`, ...notes].join("\n"),
        isError: false,
      };
    }
    return { output: [...results, ...notes].join("\n"), isError: false };
  },
};

/** Where a line matches: the index of the first match, or -1. */
type Matcher = (line: string) => number;

function matcherFor(pattern: string, regex: boolean): Matcher {
  if (!regex) return (line) => line.indexOf(pattern);
  let compiled: RegExp;
  try {
    compiled = new RegExp(pattern);
  } catch (error) {
    throw new ToolError(
      "invalid_arguments",
      `Invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}. ` +
        "Fix the pattern (JavaScript syntax), or pass regex: false to search for the literal text.",
    );
  }
  return (line) => line.search(compiled);
}

function* matchLines(
  content: string,
  matches: Matcher,
): Generator<{ line: number; text: string; index: number }> {
  let line = 0;
  let start = 0;
  while (start < content.length) {
    line++;
    let end = content.indexOf("\n", start);
    if (end === -1) end = content.length;
    const text = content.slice(start, end > start && content[end - 1] === "\r" ? end - 1 : end);
    const index = matches(text);
    if (index !== -1) yield { line, text, index };
    start = end + 1;
  }
}

/** The line, cut to MAX_LINE_CHARS around the match so the match stays visible. */
function excerpt(text: string, index: number): string {
  if (text.length <= MAX_LINE_CHARS) return text;
  const from = index + 50 > MAX_LINE_CHARS ? Math.max(0, index - 100) : 0;
  const cut = text.slice(from, from + MAX_LINE_CHARS);
  return `${from > 0 ? "…" : ""}${cut}${from + MAX_LINE_CHARS < text.length ? "…" : ""}`;
}

/** The file's text, or why it is not searched ("skip": gone, a symlink, binary). */
async function readText(path: string): Promise<{ text: string } | "skip" | "large"> {
  try {
    // Symlinks are not followed: their target may lie outside the workspace.
    const stats = await lstat(path);
    if (!stats.isFile()) return "skip";
    if (stats.size > MAX_FILE_BYTES) return "large";
    const content = await readFile(path);
    if (looksBinary(content)) return "skip";
    const text = content.toString("utf8");
    return { text: text.startsWith("\uFEFF") ? text.slice(1) : text };
  } catch {
    // Vanished or unreadable since it was listed.
    return "skip";
  }
}
