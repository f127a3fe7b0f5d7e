import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { chmod } from "node:fs/promises";
import type { LineFileSystem } from "../json-lines-file.js";

/** An errno error as node:fs throws it. */
export function fsError(
  code: "ENOSPC" | "EACCES" | "EIO",
  syscall: string,
  path?: string,
): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${code}: injected, ${syscall}${path ? ` '${path}'` : ""}`);
  error.code = code;
  error.syscall = syscall;
  return error;
}

/**
 * node:fs whose writes fail with `code` while `failing` is true. The first failing write still
 * puts `partialBytes` bytes on disk and returns them (as write(2) does when the disk fills up
 * mid-buffer); the writes after it throw. Counts the writes that failed.
 */
export function failingFs(code: "ENOSPC" | "EACCES" | "EIO" = "ENOSPC", partialBytes = 0) {
  const state = { failing: false, failures: 0, partialDone: false };
  const writeSync = ((fd: number, buffer: Buffer, offset: number, length: number) => {
    if (state.failing) {
      if (!state.partialDone && partialBytes > 0) {
        state.partialDone = true;
        return fs.writeSync(fd, buffer, offset, Math.min(partialBytes, length));
      }
      state.failures++;
      throw fsError(code, "write");
    }
    return fs.writeSync(fd, buffer, offset, length);
  }) as typeof fs.writeSync;
  const promises = {
    ...fs.promises,
    open: (async (path: string, flags?: string, mode?: number) => {
      if (state.failing && flags === "wx") {
        state.failures++;
        throw fsError(code, "open", path);
      }
      return fs.promises.open(path, flags, mode);
    }) as typeof fs.promises.open,
  };
  const system: LineFileSystem = { ...fs, writeSync, promises };
  return {
    fs: system,
    state,
    fail(on = true) {
      state.failing = on;
      state.partialDone = false;
    },
  };
}

/** True when this process runs as root (a read-only mode does not stop it writing). */
export const isRoot = process.getuid?.() === 0;

/**
 * Makes `dir` refuse new and removed entries: mode 0555 for a user, the immutable attribute for
 * root (whom modes do not stop). Returns the undo, or null (with the reason) when it cannot be done here.
 */
export async function lockFolder(dir: string): Promise<{ unlock: () => Promise<void> } | { reason: string }> {
  if (!isRoot) {
    await chmod(dir, 0o555);
    return { unlock: () => chmod(dir, 0o755) };
  }
  try {
    execFileSync("chattr", ["+i", dir], { stdio: "pipe" });
  } catch (error) {
    return { reason: `running as root and chattr +i failed: ${(error as Error).message.split("\n")[0]}` };
  }
  return {
    unlock: async () => {
      execFileSync("chattr", ["-i", dir], { stdio: "pipe" });
    },
  };
}
