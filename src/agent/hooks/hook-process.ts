import { spawn } from "node:child_process";
import type { SandboxedSpawn } from "../sandbox/command-sandbox.js";

/** Bytes of a hook's stdout, and of its stderr, that are kept. */
export const MAX_HOOK_OUTPUT_BYTES = 16 * 1024;
/** How long the output pipes may stay open after the hook exits (a background job holding them). */
const DRAIN_AFTER_EXIT_MS = 500;

/** How one hook command ended. */
export interface HookProcessRun {
  /** Null when it was killed (time budget, interrupt) or died by a signal. */
  exitCode: number | null;
  stdout: BoundedText;
  stderr: BoundedText;
  timedOut: boolean;
}

/** Output kept up to a byte bound: `text` is its start, `dropped` the bytes past the bound. */
export interface BoundedText {
  text: string;
  dropped: number;
}

export interface HookProcessOptions {
  cwd: string;
  /** Written to the hook's stdin (the event as JSON), then stdin is closed. */
  input: string;
  timeoutMs: number;
  /** Kills the hook (the turn was interrupted). */
  signal: AbortSignal;
  /** Default: {@link MAX_HOOK_OUTPUT_BYTES}. */
  maxOutputBytes?: number;
}

/**
 * Runs one hook command (bash, or bwrap around it) as the leader of its own process group, so its
 * time budget or an interrupt kills its children too. Rejects only when it could not be started.
 */
export function runHookProcess(
  spawnSpec: SandboxedSpawn,
  options: HookProcessOptions,
): Promise<HookProcessRun> {
  const maxBytes = options.maxOutputBytes ?? MAX_HOOK_OUTPUT_BYTES;
  return new Promise((resolve, reject) => {
    const child = spawn(spawnSpec.file, spawnSpec.args, {
      cwd: options.cwd,
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
      env: spawnSpec.env,
    });
    const stdout = new BoundedCapture(maxBytes);
    const stderr = new BoundedCapture(maxBytes);
    child.stdout.on("data", (chunk: Buffer) => stdout.add(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.add(chunk));
    // A hook that exits without reading its stdin closes the pipe under the write.
    child.stdin.on("error", () => {});
    child.stdin.end(options.input);

    let timedOut = false;
    let exitCode: number | null | undefined;
    let drainTimer: NodeJS.Timeout | undefined;
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    options.signal.addEventListener("abort", killGroup, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      clearTimeout(drainTimer);
      options.signal.removeEventListener("abort", killGroup);
    };
    child.on("error", (error) => {
      cleanup();
      reject(error);
    });
    child.on("exit", (code) => {
      exitCode = code;
      drainTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, DRAIN_AFTER_EXIT_MS);
    });
    child.on("close", (code) => {
      cleanup();
      resolve({
        exitCode: timedOut ? null : (exitCode ?? code),
        stdout: stdout.result(),
        stderr: stderr.result(),
        timedOut,
      });
    });
    if (options.signal.aborted) killGroup();
  });
}

/** Keeps the first `maxBytes` bytes and counts the rest, so memory stays bounded. */
class BoundedCapture {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;

  constructor(private readonly maxBytes: number) {}

  add(chunk: Buffer): void {
    const take = Math.min(this.maxBytes - this.kept, chunk.length);
    if (take > 0) {
      this.chunks.push(chunk.subarray(0, take));
      this.kept += take;
    }
    this.dropped += chunk.length - take;
  }

  result(): BoundedText {
    return { text: Buffer.concat(this.chunks).toString("utf8"), dropped: this.dropped };
  }
}
