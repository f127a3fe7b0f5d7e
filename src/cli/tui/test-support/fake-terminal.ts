import type { EventEmitter } from "node:events";
import { PassThrough, Writable } from "node:stream";

/** Key sequences as a terminal in raw mode sends them. */
export const KEYS = {
  enter: "\r",
  tab: "\t",
  escape: "\x1b",
  up: "\x1b[A",
  down: "\x1b[B",
  backspace: "\x7f",
  ctrlC: "\x03",
  ctrlD: "\x04",
} as const;

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching escape sequences is the point
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/**
 * A terminal's output side for Ink: a TTY-like Writable that keeps every write. Rendered with
 * `debug: true`, each write is a whole frame (printed entries and the live part together), so
 * the last one is the screen as the person would see it.
 */
export class FakeStdout extends Writable {
  readonly isTTY = true;
  columns = 120;
  rows = 40;
  readonly writes: string[] = [];

  override _write(
    chunk: Buffer | string,
    _encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    this.writes.push(String(chunk));
    this.emit("frame");
    callback();
  }

  /** The last write that shows anything (cursor and mode switches alone are skipped), with colours. */
  lastFrame(): string {
    for (let i = this.writes.length - 1; i >= 0; i--) {
      if (stripAnsi(this.writes[i]!).trim() !== "") return this.writes[i]!;
    }
    return "";
  }

  /** The last frame without colours. */
  screen(): string {
    return stripAnsi(this.lastFrame());
  }

  /**
   * Resolves with the first frame (without colours, unless `raw`) for which `predicate` holds,
   * checking the current one first. Rejects after `timeoutMs` with the last frame in the message.
   */
  waitFor(
    predicate: (frame: string) => boolean,
    options: { timeoutMs?: number; raw?: boolean } = {},
  ): Promise<string> {
    return waitForOutput(
      this,
      () => (options.raw ? this.lastFrame() : this.screen()),
      predicate,
      options.timeoutMs,
    );
  }

  /** Waits for a frame containing `text`. */
  waitForText(text: string, options: { timeoutMs?: number } = {}): Promise<string> {
    return this.waitFor((frame) => frame.includes(text), options);
  }
}

/** A terminal's input side: a TTY-like stream whose raw mode is a no-op. */
export class FakeStdin extends PassThrough {
  readonly isTTY = true;
  isRaw = false;

  setRawMode(mode: boolean): this {
    this.isRaw = mode;
    return this;
  }

  ref(): this {
    return this;
  }

  unref(): this {
    return this;
  }

  /**
   * Sends one key or a run of typed text, then lets Ink read it: separate writes in one tick would
   * reach Ink as one chunk, and `abc\r` is not Enter.
   */
  async press(sequence: string): Promise<void> {
    this.write(sequence);
    await new Promise<void>((resolve) => setImmediate(resolve));
    // An Esc waits briefly in Ink's parser for the rest of a possible escape sequence.
    if (sequence === KEYS.escape) await new Promise<void>((resolve) => setTimeout(resolve, 40));
  }
}

/**
 * Resolves with `read()` once `predicate` holds for it, checking now and after each "frame" event
 * of `source`; rejects after `timeoutMs` (default 10 s) with what was last read.
 */
export function waitForOutput(
  source: EventEmitter,
  read: () => string,
  predicate: (output: string) => boolean,
  timeoutMs = 10_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const output = read();
      if (!predicate(output)) return false;
      source.off("frame", check);
      clearTimeout(timer);
      resolve(output);
      return true;
    };
    const timer = setTimeout(() => {
      source.off("frame", check);
      reject(new Error(`No matching output within ${timeoutMs} ms. Last output:\n${read()}`));
    }, timeoutMs);
    if (!check()) source.on("frame", check);
  });
}
