import { randomBytes } from "node:crypto";
import * as nodeFs from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";

/** The file operations a {@link JsonLinesFile} uses; tests pass one that fails on purpose (ENOSPC). */
export type LineFileSystem = Pick<
  typeof nodeFs,
  | "mkdirSync"
  | "statSync"
  | "chmodSync"
  | "ftruncateSync"
  | "openSync"
  | "writeSync"
  | "fstatSync"
  | "fchmodSync"
  | "readSync"
  | "closeSync"
  | "promises"
>;

export interface JsonLinesFileOptions {
  /**
   * Told when a write fails (disk full, permissions). Told once per outage: not again until a
   * write succeeded in between. The records stay queued and are written with the next append.
   */
  onError?: (error: Error) => void;
  /** Told when every queued record is on disk again after a reported failure. */
  onRecovered?: () => void;
  /** Default: node:fs. */
  fs?: LineFileSystem;
}

/**
 * An append-only JSON Lines file of private records (0600 in a 0700 folder, an existing file or
 * folder is tightened when first written). An append is written at once, synchronously, so a record
 * is on disk before any listener that comes after the writer hears of it, and a SIGKILL loses at
 * most a line in the middle of being written (readers skip it; the next append starts a new line).
 *
 * A failed write never loses a record and never ends the process: what is not on disk stays queued
 * (to the byte: a partial write is continued where it stopped, so no line is torn or doubled) and
 * is written with the next append or flush; the failure is reported once through `onError`.
 */
export class JsonLinesFile {
  /** Whole lines not yet (all) on disk, oldest first. */
  private pending: Buffer[] = [];
  /** Bytes of `pending[0]` already on disk. */
  private written = 0;
  /** The folder and the file's mode were checked, and a torn last line looked for. */
  private checked = false;
  private failure: Error | null = null;
  /** A compaction in progress: appends wait in `pending` until it is renamed into place or given up. */
  private replacing: Promise<boolean> | null = null;
  private readonly fs: LineFileSystem;

  constructor(
    readonly file: string,
    private readonly options: JsonLinesFileOptions = {},
  ) {
    this.fs = options.fs ?? nodeFs;
  }

  /** The last write's error while records wait to be written; null when everything is on disk. */
  get error(): Error | null {
    return this.failure;
  }

  /** Whether records wait to be written (the last try failed, or a replacement runs). */
  get waiting(): boolean {
    return this.pending.length > 0;
  }

  /** Tightens the folder to 0700 and the file (if it exists) to 0600 now, rather than at the first write. */
  secure(): void {
    try {
      this.check(false);
    } catch (error) {
      this.failed(error as Error);
    }
  }

  /** Appends `record` as one line; returns the line's length in bytes. */
  append(record: unknown): number {
    const line = Buffer.from(`${JSON.stringify(record)}\n`);
    this.pending.push(line);
    if (!this.replacing) this.writePending();
    return line.length;
  }

  /** Resolves once every record so far is on disk, or a retry of the queued ones failed again. */
  async flush(): Promise<void> {
    while (this.replacing) await this.replacing;
    if (this.pending.length > 0) this.writePending();
  }

  /**
   * Replaces the file with `records` atomically (a temp file beside it, fsynced, then renamed over
   * it), once what is queued is written (refused, resolving false, while that fails or another
   * replacement runs). Callers pass records that mean the same as the file, so a
   * failed replacement loses nothing: the file stays as it was and appends go on there. Resolves
   * true when the file was replaced; a failure is reported like a failed write, and resolves false.
   */
  replace(records: readonly unknown[]): Promise<boolean> {
    if (this.replacing) return Promise.resolve(false);
    if (this.pending.length > 0) this.writePending();
    if (this.pending.length > 0) return Promise.resolve(false);
    // From here until the rename, appends wait in `pending` (the old file is about to go).
    const text = Buffer.from(records.map((record) => `${JSON.stringify(record)}\n`).join(""));
    const replacing = this.writeReplacement(text).then((replaced) => {
      this.replacing = null;
      if (this.pending.length > 0) this.writePending();
      return replaced;
    });
    this.replacing = replacing;
    return replacing;
  }

  private async writeReplacement(text: Buffer): Promise<boolean> {
    const dir = path.dirname(this.file);
    const temp = path.join(dir, `.${path.basename(this.file)}.${randomBytes(6).toString("hex")}.tmp`);
    const { promises } = this.fs;
    try {
      const handle = await promises.open(temp, "wx", 0o600);
      try {
        await handle.writeFile(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await promises.rename(temp, this.file);
    } catch (error) {
      await promises.rm(temp, { force: true }).catch(() => {});
      this.failed(error as Error);
      return false;
    }
    // The rename is durable once the folder is synced; without it a power cut may bring the old file back, which means the same.
    await promises
      .open(dir, "r")
      .then(async (handle) => {
        await handle.sync().catch(() => {});
        await handle.close();
      })
      .catch(() => {});
    this.checked = true;
    return true;
  }

  private writePending(): void {
    try {
      this.check(true);
      const fd = this.fs.openSync(this.file, "a", 0o600);
      try {
        while (this.pending.length > 0) {
          const line = this.pending[0]!;
          this.written += this.fs.writeSync(fd, line, this.written, line.length - this.written);
          if (this.written === line.length) {
            this.pending.shift();
            this.written = 0;
          }
        }
      } finally {
        this.fs.closeSync(fd);
      }
    } catch (error) {
      this.failed(error as Error);
      return;
    }
    if (this.failure) {
      this.failure = null;
      const { onRecovered } = this.options;
      if (onRecovered) queueMicrotask(onRecovered);
    }
  }

  /**
   * Makes the folder 0700 and the file 0600; with `create`, makes them, and cuts a last line left
   * unfinished by a crash (it could not be read anyway), so the next record starts a line of its
   * own. Done once, and again after a failure (the folder may have been removed meanwhile).
   */
  private check(create: boolean): void {
    if (this.checked) return;
    const { fs } = this;
    const dir = path.dirname(this.file);
    let fd: number;
    try {
      if (create) fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
      const folder = fs.statSync(dir);
      if ((folder.mode & 0o077) !== 0 && ownedByUser(folder.uid)) fs.chmodSync(dir, 0o700);
      fd = fs.openSync(this.file, create ? "a+" : "r", 0o600);
    } catch (error) {
      // Securing alone makes nothing: a file not there yet is made private when first written.
      if (!create && (error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    try {
      const stats = fs.fstatSync(fd);
      if ((stats.mode & 0o077) !== 0 && ownedByUser(stats.uid)) fs.fchmodSync(fd, stats.mode & 0o700);
      // Our own line written in part (a failed write) is continued where it stopped instead.
      if (create && this.written === 0 && stats.size > 0) {
        const end = completeLinesEnd(fs, fd, stats.size);
        if (end < stats.size) fs.ftruncateSync(fd, end);
      }
    } finally {
      fs.closeSync(fd);
    }
    if (create) this.checked = true;
  }

  private failed(error: Error): void {
    this.checked = false;
    const first = this.failure === null;
    this.failure = error;
    // Told after the write that failed returns: a listener may append (a notice) without nesting in it.
    const { onError } = this.options;
    if (first && onError) queueMicrotask(() => onError(error));
  }
}

/** The length of `fd`'s first `size` bytes up to and with its last newline (0: none). */
function completeLinesEnd(fs: LineFileSystem, fd: number, size: number): number {
  const chunk = Buffer.alloc(64 * 1024);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const read = fs.readSync(fd, chunk, 0, end - start, start);
    const newline = chunk.subarray(0, read).lastIndexOf(0x0a);
    if (newline !== -1) return start + newline + 1;
    end = start;
  }
  return 0;
}

function ownedByUser(uid: number): boolean {
  return !process.getuid || process.getuid() === uid;
}

/** What reading a JSON Lines file found. */
export interface JsonLinesRead {
  /** Lines that did not parse, the last one excepted (see `tornLast`). */
  damaged: number;
  /** The last line did not parse: a write cut short by a crash (not damage). */
  tornLast: boolean;
}

/**
 * Reads `file` line by line (streamed: a file of any size, one line in memory at a time), giving
 * each parsed record to `onRecord`. A line that does not parse is skipped and counted; the file's
 * last line cut short is expected after a crash and counted apart.
 */
export async function readJsonLines(
  file: string,
  onRecord: (record: unknown) => void,
): Promise<JsonLinesRead> {
  const lines = createInterface({
    input: nodeFs.createReadStream(file),
    crlfDelay: Number.POSITIVE_INFINITY,
  });
  let damaged = 0;
  let lastBad = false;
  for await (const line of lines) {
    if (!line.trim()) continue;
    if (lastBad) damaged++;
    lastBad = false;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      lastBad = true;
      continue;
    }
    onRecord(record);
  }
  return { damaged, tornLast: lastBad };
}
