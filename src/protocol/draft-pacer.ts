/** Least time between two drafts a face sends while the person types (`turn.draft`, `spark.draft`). */
export const DRAFT_INTERVAL_MS = 150;

export interface DraftPacerOptions {
  /** Default: {@link DRAFT_INTERVAL_MS}. */
  intervalMs?: number;
  /** Default: `performance.now`. */
  now?: () => number;
  /** Runs `callback` after `ms`; returns a cancel function. Default: `setTimeout`. */
  schedule?: (callback: () => void, ms: number) => () => void;
}

/**
 * When a face sends the message being typed as a draft: only once a word is finished or removed
 * (the text before the last white space changed; the server ignores the word being typed anyway),
 * at most once per interval, and the latest text when the interval ends. Pure pacing: the face
 * passes in how to send. Shared by the terminal UI, the web app and the VS Code extension.
 */
export class DraftPacer {
  private lastSettled = "";
  private lastSentAt = Number.NEGATIVE_INFINITY;
  private latest = "";
  private cancelTimer: (() => void) | null = null;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly schedule: (callback: () => void, ms: number) => () => void;

  constructor(
    private readonly send: (text: string) => void,
    options: DraftPacerOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? DRAFT_INTERVAL_MS;
    this.now = options.now ?? (() => performance.now());
    this.schedule =
      options.schedule ??
      ((callback, ms) => {
        const timer = setTimeout(callback, ms);
        return () => clearTimeout(timer);
      });
  }

  /** The input now reads `text`. */
  update(text: string): void {
    this.latest = text;
    if (this.cancelTimer || settledPart(text) === this.lastSettled) return;
    const wait = this.lastSentAt + this.intervalMs - this.now();
    if (wait <= 0) this.flush();
    else this.cancelTimer = this.schedule(() => this.flush(), wait);
  }

  /** The message was sent (or the input cleared): nothing pending goes out, the next word starts over. */
  reset(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
    this.lastSettled = "";
    this.latest = "";
  }

  private flush(): void {
    this.cancelTimer = null;
    const settled = settledPart(this.latest);
    if (settled === this.lastSettled) return;
    this.lastSettled = settled;
    this.lastSentAt = this.now();
    if (settled.trim() !== "") this.send(this.latest);
  }
}

/** The text up to its last white space: the words that are finished. */
function settledPart(text: string): string {
  const match = /\s\S*$/u.exec(text);
  return match ? text.slice(0, match.index) : "";
}
