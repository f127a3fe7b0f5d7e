import { join } from "node:path";
import { z } from "zod";
import { looksBinary } from "./internal/binary.js";
import { readBounded } from "./internal/bounded-read.js";
import { listFiles } from "./internal/file-list.js";
import { PatternMatcher } from "./internal/pattern-matcher.js";
import { statOrNotFound } from "./internal/stat-path.js";
import { parametersOf, type Tool } from "./tool.js";

/** Larger files are skipped (generated bundles, data dumps); none is read past this. */
export const SEARCH_MAX_FILE_BYTES = 8 * 1024 * 1024;
/** A search stops after this long and returns what it found so far. */
export const SEARCH_TIME_BUDGET_MS = 20_000;
/** Characters of a matching line shown. */
const MAX_LINE_CHARS = 300;
/** Files read at once. */
const CONCURRENCY = 16;

const description = `Search text files; prints "path:line: text" per matching line. pattern is plain text, \
or with regex an RE2 regular expression (no backreferences or lookaround; (?i) ignores case). Skips \
ignored, binary and over-${SEARCH_MAX_FILE_BYTES / 1024 / 1024}-MiB files, .git, .spark and node_modules; \
stops after ${SEARCH_TIME_BUDGET_MS / 1000} s.`;

const schema = z.strictObject({
  pattern: z.string().min(1).max(1000),
  regex: z.boolean().default(false),
  path: z.string().optional().describe("A directory or file. Default: all."),
  max_results: z.number().int().min(1).max(1000).default(100),
});

export interface SearchToolOptions {
  /** How long one search may run before it returns what it found. Default: SEARCH_TIME_BUDGET_MS. */
  timeBudgetMs?: number;
}

/** Why a search ended. */
type StopReason = "done" | "max_results" | "time_budget";

export function createSearchTool(options: SearchToolOptions = {}): Tool<z.infer<typeof schema>> {
  const timeBudgetMs = options.timeBudgetMs ?? SEARCH_TIME_BUDGET_MS;
  return {
    name: "search",
    readOnly: true,
    description,
    parameters: parametersOf(schema),
    schema,
    async run(args, ctx) {
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

      const budget = AbortSignal.timeout(timeBudgetMs);
      const signal = AbortSignal.any([ctx.signal, budget]);
      const results: string[] = [];
      let skippedLarge = 0;
      let stop: StopReason = "done";
      try {
        await using matcher = await PatternMatcher.start({
          pattern: args.pattern,
          regex: args.regex,
          maxLineChars: MAX_LINE_CHARS,
          signal,
        });
        search: for (let at = 0; at < files.length; at += CONCURRENCY) {
          signal.throwIfAborted();
          const batch = files.slice(at, at + CONCURRENCY);
          const contents = await Promise.all(batch.map((file) => readText(file)));
          for (const [i, content] of contents.entries()) {
            if (content === "large") skippedLarge++;
            if (typeof content === "string") continue;
            const path = ctx.workspace.relative(batch[i]!);
            // One more than still fits, to tell "exactly full" from "more left".
            const matches = await matcher.match(content.text, args.max_results - results.length + 1);
            for (const match of matches) {
              if (results.length >= args.max_results) {
                stop = "max_results";
                break search;
              }
              results.push(`${path}:${match.line}: ${match.text}`);
            }
          }
        }
      } catch (error) {
        if (ctx.signal.aborted || !budget.aborted) throw error;
        stop = "time_budget";
      }
      return { output: render(args, shown, results, { stop, skippedLarge, timeBudgetMs }), isError: false };
    },
  };
}

export const searchTool = createSearchTool();

function render(
  args: z.infer<typeof schema>,
  shown: string,
  results: readonly string[],
  end: { stop: StopReason; skippedLarge: number; timeBudgetMs: number },
): string {
  const notes: string[] = [];
  if (end.stop === "max_results") {
    notes.push(
      `[Stopped after ${args.max_results} match${args.max_results === 1 ? "" : "es"}; narrow the pattern or path, or raise max_results (at most 1000).]`,
    );
  }
  if (end.stop === "time_budget") {
    notes.push(
      `[Stopped after the ${end.timeBudgetMs / 1000} s time budget; the matches above are those found so far. Narrow the path or the pattern.]`,
    );
  }
  if (end.skippedLarge > 0) {
    notes.push(`[Skipped ${end.skippedLarge} file(s) over ${SEARCH_MAX_FILE_BYTES / 1024 / 1024} MiB.]`);
  }
  if (results.length === 0) {
    const kind = args.regex ? "regex" : "text";
    const where = shown === "." ? "the workspace" : shown;
    return [`No matches for ${kind} ${JSON.stringify(args.pattern)} in ${where}.`, ...notes].join("\n");
  }
  return [...results, ...notes].join("\n");
}

/** The file's text, or why it is not searched ("skip": gone, a symlink, not a file, binary). */
async function readText(path: string): Promise<{ text: string } | "skip" | "large"> {
  try {
    // Symlinks are not followed (O_NOFOLLOW): their target may lie outside the workspace.
    const read = await readBounded(path, SEARCH_MAX_FILE_BYTES);
    if (read.kind === "too_large") return "large";
    if (read.kind === "not_file" || looksBinary(read.content)) return "skip";
    const text = read.content.toString("utf8");
    return { text: text.startsWith("\uFEFF") ? text.slice(1) : text };
  } catch {
    // Vanished or unreadable since it was listed, or a symlink.
    return "skip";
  }
}
