/** The longest pause between two frames, however long the last one took to draw. */
const MAX_FRAME_MS = 250;

export interface FramePacerOptions {
  /** Least time between the starts of two frames. */
  frameMs: number;
  /**
   * The share of the main thread drawing may take: a frame that took `cost` ms to draw is followed
   * by a pause, so the next starts `cost / share` ms after it at the earliest (up to 250 ms).
   */
  share: number;
  /** Clock in ms. */
  now: () => number;
}

/**
 * When the next frame may start. A long answer's frames cost more to draw (a long unfinished line
 * is wrapped, measured and styled again each time), and drawing runs on the thread that also hands
 * the engine its tokens; pacing frames by their cost keeps what the view takes bounded, whatever
 * is on the screen.
 */
export class FramePacer {
  private lastStart = Number.NEGATIVE_INFINITY;
  private lastCost = 0;

  constructor(private readonly options: FramePacerOptions) {}

  /** Ms until the next frame may start (0 or less: now). */
  wait(): number {
    const { frameMs, share, now } = this.options;
    const gap = Math.max(frameMs, Math.min(MAX_FRAME_MS, this.lastCost / share));
    return this.lastStart + gap - now();
  }

  /** A frame starts drawing; the returned function is called once it is drawn. */
  start(): () => void {
    const started = this.options.now();
    this.lastStart = started;
    return () => {
      this.lastCost = this.options.now() - started;
    };
  }
}
