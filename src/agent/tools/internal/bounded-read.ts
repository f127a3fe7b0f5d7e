import { constants, type Stats } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";

/** Bytes read per call, so a large read never asks for one huge buffer up front. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * Opens `path` for reading without following a final symlink and without blocking on a FIFO or
 * device (O_NONBLOCK, which regular files ignore). Callers check `stats` on the returned handle:
 * a check by name could see another file than the one read.
 */
export async function openForRead(path: string): Promise<{ handle: FileHandle; stats: Stats }> {
  const flags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
  const handle = await open(path, flags);
  try {
    return { handle, stats: await handle.stat() };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

export type BoundedRead =
  | { kind: "content"; content: Buffer }
  /** Larger than the cap (by its size when opened, or it grew past the cap while being read). */
  | { kind: "too_large"; size: number }
  /** A directory, FIFO, socket or device. */
  | { kind: "not_file" };

/**
 * The whole content of a regular file of at most `maxBytes`. Never reads more than `maxBytes + 1`
 * bytes, however large the file is or grows. Errors from opening (ENOENT, ELOOP for a symlink)
 * propagate.
 */
export async function readBounded(path: string, maxBytes: number): Promise<BoundedRead> {
  const { handle, stats } = await openForRead(path);
  try {
    if (!stats.isFile()) return { kind: "not_file" };
    if (stats.size > maxBytes) return { kind: "too_large", size: stats.size };
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const want = Math.min(CHUNK_BYTES, maxBytes + 1 - total);
      const { buffer, bytesRead } = await handle.read({ buffer: Buffer.allocUnsafe(want) });
      if (bytesRead === 0) break;
      chunks.push(buffer.subarray(0, bytesRead));
      total += bytesRead;
      if (total > maxBytes) return { kind: "too_large", size: total };
    }
    return { kind: "content", content: Buffer.concat(chunks, total) };
  } finally {
    await handle.close();
  }
}
