import type { FileHandle } from "node:fs/promises";
import { z } from "zod";
import { looksBinary } from "./internal/binary.js";
import { openForRead } from "./internal/bounded-read.js";
import { parametersOf, type Tool, ToolError } from "./tool.js";

/** Most lines one call returns. */
export const READ_MAX_LINES = 2000;
/** Most bytes of numbered output one call returns. */
export const READ_MAX_BYTES = 256 * 1024;
/** Bytes of a file read_file reads at most (from its start); lines past them are not shown. */
export const READ_FILE_MAX_BYTES = 64 * 1024 * 1024;
/** Longer lines are cut, so one minified line cannot fill the whole answer. */
const MAX_LINE_CHARS = 2000;

const description = `Read a text file; each line comes as "N<tab>text" (N is not in the file). At most \
${READ_MAX_LINES} lines or ${READ_MAX_BYTES / 1024} KiB a call: for more, give start_line and end_line \
(1-based, inclusive).`;

const schema = z.strictObject({
  path: z.string().min(1).describe("The file to read."),
  start_line: z.number().int().min(1).optional(),
  end_line: z.number().int().min(1).optional(),
});

export interface ReadFileToolOptions {
  /** Bytes of a file read at most, from its start. Default: READ_FILE_MAX_BYTES. */
  maxBytes?: number;
}

export function createReadFileTool(options: ReadFileToolOptions = {}): Tool<z.infer<typeof schema>> {
  const maxBytes = options.maxBytes ?? READ_FILE_MAX_BYTES;
  return {
    name: "read_file",
    readOnly: true,
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
      const { handle, stats } = await openOrNotFound(absolute, shown);
      let page: Page;
      try {
        if (stats.isDirectory()) {
          throw new ToolError(
            "invalid_arguments",
            `${shown} is a directory; use list_dir to see its contents.`,
          );
        }
        if (!stats.isFile()) {
          throw new ToolError("not_allowed", `${shown} is not a regular file (a FIFO, socket or device).`);
        }
        if (await sniffBinary(handle)) {
          throw new ToolError(
            "not_allowed",
            `${shown} is a binary file (${stats.size} bytes); read_file only shows text files.`,
          );
        }
        const readable = Math.min(stats.size, maxBytes);
        page = await readLines(
          handle,
          readable,
          start,
          args.end_line ?? Number.POSITIVE_INFINITY,
          ctx.signal,
        );
      } finally {
        await handle.close();
      }
      const cut =
        stats.size > maxBytes
          ? `[${shown} is ${stats.size} bytes; read_file reads only its first ${formatBytes(maxBytes)} ` +
            `(lines 1-${page.total}, the last one possibly cut). Use search to find text in it.]`
          : null;
      if (page.total === 0) return { output: `[${shown} is empty.]`, isError: false };
      if (start > page.total) {
        if (cut !== null) throw new ToolError("not_allowed", cut);
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
        const further =
          last < page.total ? ` Call read_file with start_line=${last + 1} to read further.` : "";
        output += `\n[Showing lines ${start}-${last} of ${page.total}.${further}]`;
      }
      if (cut !== null) output += `\n${cut}`;
      return { output, isError: false };
    },
  };
}

export const readFileTool = createReadFileTool();

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${bytes} bytes`;
}

async function openOrNotFound(absolute: string, shown: string): ReturnType<typeof openForRead> {
  try {
    return await openForRead(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new ToolError(
        "not_found",
        `No file or directory "${shown}" in the workspace. Use list_dir or search to find the right path.`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
}

async function sniffBinary(handle: FileHandle): Promise<boolean> {
  const { buffer, bytesRead } = await handle.read({ buffer: Buffer.alloc(8000), position: 0 });
  return looksBinary(buffer.subarray(0, bytesRead));
}

interface Page {
  lines: string[];
  /** Lines in the whole file (a final line without a newline counts). */
  total: number;
  /** True when the caps, not `end`, ended the page. */
  capped: boolean;
}

/**
 * Lines `start..end` (1-based, inclusive) within the caps, from the first `readable` bytes of the
 * file, streamed so that memory stays bounded.
 */
async function readLines(
  handle: FileHandle,
  readable: number,
  start: number,
  end: number,
  signal: AbortSignal,
): Promise<Page> {
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
  const chunks =
    readable === 0
      ? []
      : handle.createReadStream({
          start: 0,
          end: readable - 1,
          autoClose: false,
          signal,
          highWaterMark: 256 * 1024,
        });
  for await (const chunk of chunks) {
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
