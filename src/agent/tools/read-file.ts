import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";
import { z } from "zod";
import { looksBinary } from "./internal/binary.js";
import { statOrNotFound } from "./internal/stat-path.js";
import { parametersOf, type Tool, ToolError } from "./tool.js";

/** Most lines one call returns. */
export const READ_MAX_LINES = 2000;
/** Most bytes of numbered output one call returns. */
export const READ_MAX_BYTES = 256 * 1024;
/** Longer lines are cut, so one minified line cannot fill the whole answer. */
const MAX_LINE_CHARS = 2000;

const description = `Read a text file of the workspace. Returns its lines prefixed with their line numbers \
(1-based) and a tab; the numbers are not part of the file. Reads at most ${READ_MAX_LINES} lines or \
${READ_MAX_BYTES / 1024} KiB per call: for longer files, pass start_line and end_line (inclusive) to read \
the part you need. Read a file before editing it, and copy patch context from what you read.`;

const schema = z.strictObject({
  path: z.string().min(1).describe("Path of the file, relative to the workspace root."),
  start_line: z.number().int().min(1).optional().describe("First line to read (1-based). Default: 1."),
  end_line: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("Last line to read (inclusive). Default: the end of the file, within the limits."),
});

export const readFileTool: Tool<z.infer<typeof schema>> = {
  name: "read_file",
  description,
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    const start = args.start_line ?? 1;
    if (args.end_line !== undefined && args.end_line < start) {
      throw new ToolError(
        "invalid_arguments",
        `end_line (${args.end_line}) is before start_line (${start}); pass a range with end_line >= start_line.`,
      );
    }
    const absolute = await ctx.workspace.resolve(args.path);
    const shown = ctx.workspace.relative(absolute);
    const stats = await statOrNotFound(absolute, shown);
    if (stats.isDirectory()) {
      throw new ToolError("invalid_arguments", `${shown} is a directory; use list_dir to see its contents.`);
    }
    if (await sniffBinary(absolute)) {
      throw new ToolError(
        "not_allowed",
        `${shown} is a binary file (${stats.size} bytes); read_file only shows text files.`,
      );
    }

    const page = await readLines(absolute, start, args.end_line ?? Number.POSITIVE_INFINITY, ctx.signal);
    if (page.total === 0) return { output: `[${shown} is empty.]`, isError: false };
    if (start > page.total) {
      throw new ToolError(
        "invalid_arguments",
        `start_line ${start} is past the end of ${shown}, which has ${page.total} line${page.total === 1 ? "" : "s"}.`,
      );
    }
    const last = start + page.lines.length - 1;
    const width = String(last).length;
    let output = page.lines.map((line, i) => `${String(start + i).padStart(width)}\t${line}`).join("\n");
    if (page.capped) {
      output +=
        `\n[Output capped at ${READ_MAX_LINES} lines / ${READ_MAX_BYTES / 1024} KiB: showing lines ` +
        `${start}-${last} of ${page.total}. Call read_file with start_line=${last + 1} to read further.]`;
    } else if (start > 1 || last < page.total) {
      const further = last < page.total ? ` Call read_file with start_line=${last + 1} to read further.` : "";
      output += `\n[Showing lines ${start}-${last} of ${page.total}.${further}]`;
    }
    return { output, isError: false };
  },
};

async function sniffBinary(path: string): Promise<boolean> {
  const file = await open(path, "r");
  try {
    const { buffer, bytesRead } = await file.read({ buffer: Buffer.alloc(8000) });
    return looksBinary(buffer.subarray(0, bytesRead));
  } finally {
    await file.close();
  }
}

interface Page {
  lines: string[];
  /** Lines in the whole file (a final line without a newline counts). */
  total: number;
  /** True when the caps, not `end`, ended the page. */
  capped: boolean;
}

/** Lines `start..end` (1-based, inclusive) within the caps, streaming so any file size works. */
async function readLines(path: string, start: number, end: number, signal: AbortSignal): Promise<Page> {
  const lines: string[] = [];
  let bytes = 0;
  let total = 0;
  let capped = false;
  const take = (raw: Buffer) => {
    total++;
    let text = raw.toString("utf8");
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (total === 1 && text.startsWith("\uFEFF")) text = text.slice(1);
    if (text.length > MAX_LINE_CHARS) {
      text = `${text.slice(0, MAX_LINE_CHARS)}… [line cut: ${text.length} characters]`;
    }
    const size = Buffer.byteLength(text) + 10;
    if (lines.length >= READ_MAX_LINES || bytes + size > READ_MAX_BYTES) {
      capped = true;
      return;
    }
    bytes += size;
    lines.push(text);
  };
  // Only lines in the page are assembled; the rest are just counted.
  const wanted = () => total + 1 >= start && total + 1 <= end && !capped;
  let pending: Buffer[] = [];
  let partial = false;
  for await (const chunk of createReadStream(path, { signal, highWaterMark: 256 * 1024 })) {
    const data = chunk as Buffer;
    let from = 0;
    for (let newline = data.indexOf(10); newline !== -1; newline = data.indexOf(10, from)) {
      if (wanted()) {
        pending.push(data.subarray(from, newline));
        take(Buffer.concat(pending));
      } else {
        total++;
      }
      pending = [];
      partial = false;
      from = newline + 1;
    }
    if (from < data.length) {
      partial = true;
      if (wanted()) pending.push(data.subarray(from));
    }
  }
  if (partial) {
    if (wanted()) take(Buffer.concat(pending));
    else total++;
  }
  return { lines, total, capped };
}
