/**
 * Download progress on stderr. On a terminal, one line redrawn in place (at most ~10 times a
 * second):  `model.gguf  45% [=======>        ] 312.4 MB / 694.0 MB  23.1 MB/s  ETA 0:16`.
 * Anywhere else (CI logs, pipes), a plain line at every 10% so logs stay readable.
 */

/** A transfer's progress as the bar draws it; `models`' `DownloadProgress` fits. */
export interface TransferProgress {
  /** Bytes so far. */
  receivedBytes: number;
  /** The full size, when known. */
  totalBytes: number | null;
  /** Recent transfer rate (bytes per second); 0 until measurable. */
  bytesPerSecond: number;
}

/** The part of a stream the bar needs; `process.stderr` fits. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

export interface ProgressBarOptions {
  /** Default: `process.stderr`. */
  stream?: ProgressStream;
  /** Clock in milliseconds. Default: `performance.now`. */
  now?: () => number;
  /** Minimum time between two redraws on a terminal. Default: 100 ms. */
  intervalMs?: number;
}

export interface ProgressBar {
  update(progress: TransferProgress): void;
  /** Draws the final state and ends the line. Safe to call more than once, and when nothing was drawn. */
  finish(): void;
}

const UNKNOWN_TOTAL_STEP = 100e6;
const MIN_BAR = 10;
const MAX_BAR = 30;

/** Decimal units, one decimal: `512 B`, `12.3 kB`, `312.4 MB`, `1.6 GB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${Math.round(bytes)} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = "B";
  for (const next of units) {
    if (value < 1000) break;
    value /= 1000;
    unit = next;
  }
  return `${value.toFixed(1)} ${unit}`;
}

/** `m:ss`, or `h:mm:ss` from an hour on. */
export function formatDuration(seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

function fraction(progress: TransferProgress): number | null {
  const { receivedBytes, totalBytes } = progress;
  if (totalBytes === null || totalBytes <= 0) return null;
  return Math.min(1, Math.max(0, receivedBytes / totalBytes));
}

function bar(done: number, width: number): string {
  const filled = Math.floor(done * width);
  if (filled >= width) return "=".repeat(width);
  if (filled === 0) return " ".repeat(width);
  return `${"=".repeat(filled - 1)}>${" ".repeat(width - filled)}`;
}

function rate(progress: TransferProgress): string {
  return progress.bytesPerSecond > 0 ? `${formatBytes(progress.bytesPerSecond)}/s` : "--/s";
}

function eta(progress: TransferProgress): string {
  const { receivedBytes, totalBytes, bytesPerSecond } = progress;
  if (totalBytes === null || bytesPerSecond <= 0) return "ETA --:--";
  return `ETA ${formatDuration((totalBytes - receivedBytes) / bytesPerSecond)}`;
}

function fitLabel(label: string, room: number): string {
  if (label.length <= room) return label;
  return room <= 1 ? "" : `${label.slice(0, room - 1)}…`;
}

/** The terminal line for `progress`, at most `columns - 1` characters when it can be made to fit. */
export function renderProgressLine(label: string, progress: TransferProgress, columns = 80): string {
  const done = fraction(progress);
  const received = formatBytes(progress.receivedBytes);
  if (done === null) {
    const rest = `  ${received}  ${rate(progress)}`;
    return fitLabel(label, Math.max(8, columns - 1 - rest.length)) + rest;
  }
  const percent = `${String(Math.floor(done * 100)).padStart(3)}%`;
  const tail = `${received} / ${formatBytes(progress.totalBytes ?? 0)}  ${rate(progress)}  ${eta(progress)}`;
  const fixed = 2 + percent.length + 3 + 1 + tail.length; // "  45% [" + "] " + tail
  const labelRoom = Math.max(8, Math.min(label.length, columns - 1 - fixed - MIN_BAR));
  const shown = fitLabel(label, labelRoom);
  const width = Math.max(MIN_BAR, Math.min(MAX_BAR, columns - 1 - fixed - shown.length));
  return `${shown}  ${percent} [${bar(done, width)}] ${tail}`;
}

/** The plain log line used when the stream is not a terminal. */
export function renderProgressLogLine(label: string, progress: TransferProgress): string {
  const done = fraction(progress);
  const received = formatBytes(progress.receivedBytes);
  if (done === null) return `${label}  ${received}  ${rate(progress)}`;
  const total = formatBytes(progress.totalBytes ?? 0);
  return `${label}  ${Math.floor(done * 100)}%  ${received} / ${total}  ${rate(progress)}`;
}

export function createProgressBar(label: string, options: ProgressBarOptions = {}): ProgressBar {
  const stream = options.stream ?? process.stderr;
  const now = options.now ?? (() => performance.now());
  const intervalMs = options.intervalMs ?? 100;
  const tty = stream.isTTY === true;
  let latest: TransferProgress | undefined;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let finished = false;
  let lastStep = -1;

  const draw = (progress: TransferProgress) => {
    stream.write(`\r${renderProgressLine(label, progress, stream.columns ?? 80)}\x1b[K`);
    lastDraw = now();
  };

  const step = (progress: TransferProgress): number => {
    const done = fraction(progress);
    return done === null ? Math.floor(progress.receivedBytes / UNKNOWN_TOTAL_STEP) : Math.floor(done * 10);
  };

  return {
    update(progress) {
      if (finished) return;
      latest = progress;
      if (tty) {
        const complete = progress.totalBytes !== null && progress.receivedBytes >= progress.totalBytes;
        if (complete || now() - lastDraw >= intervalMs) draw(progress);
        return;
      }
      const current = step(progress);
      if (current > lastStep) {
        lastStep = current;
        stream.write(`${renderProgressLogLine(label, progress)}\n`);
      }
    },
    finish() {
      if (finished) return;
      finished = true;
      if (tty && latest !== undefined) {
        draw(latest);
        stream.write("\n");
      }
    },
  };
}
