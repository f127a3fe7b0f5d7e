/** Bounds of what {@link RepetitionGuard} calls a loop. */
export interface RepetitionGuardOptions {
  /** The longest repeated unit looked for, in characters. Default: 256. */
  maxPeriod?: number;
  /** Characters the repeating tail must span at least. Default: 600. */
  minLength?: number;
  /** Whole repeats of the unit the tail must hold at least. Default: 8. */
  minRepeats?: number;
}

/** What the guard saw: the repeated unit (at most 80 characters of it, `…` marking a cut) and how often it came. */
export interface Repetition {
  unit: string;
  repeats: number;
}

/**
 * Watches the text a model writes (messages, reasoning and tool-call arguments, in the order they
 * stream) for a tail that repeats itself: the same unit of up to `maxPeriod` characters written
 * again and again, spanning at least `minLength` characters and `minRepeats` repeats — nested JSON
 * opening the same key forever, one line over and over, a paragraph said ten times.
 *
 * Cheap per token, with no rescans: for every period p it keeps how many characters in a row equal
 * the one p before (O(maxPeriod) work per character and O(maxPeriod) memory, whatever the length of
 * the reply).
 *
 * Output that merely resembles itself (code whose lines share most of their text) never forms an
 * exact repeating tail that long, so it is not stopped.
 */
export class RepetitionGuard {
  private readonly maxPeriod: number;
  private readonly minLength: number;
  private readonly minRepeats: number;
  /**
   * The characters written, as UTF-16 code units, in a window that slides: the last `maxPeriod`
   * are moved to its start when it fills (amortised O(1) per character, no modulo per comparison).
   */
  private readonly buffer: Uint16Array;
  /** Where the next character goes in {@link buffer}. */
  private at = 0;
  /** `runs[p]`: how many characters in a row equalled the character p before them. */
  private readonly runs: Uint32Array;
  private written = 0;
  private found: Repetition | null = null;

  constructor(options: RepetitionGuardOptions = {}) {
    this.maxPeriod = options.maxPeriod ?? 256;
    this.minLength = options.minLength ?? 600;
    this.minRepeats = options.minRepeats ?? 8;
    this.buffer = new Uint16Array(this.maxPeriod * 8);
    this.runs = new Uint32Array(this.maxPeriod + 1);
  }

  /** The loop found, once one is (it stays found); null until then. */
  get repetition(): Repetition | null {
    return this.found;
  }

  /** Adds streamed text; returns the loop as soon as the text forms one, else null. */
  push(text: string): Repetition | null {
    if (this.found) return this.found;
    const { buffer, runs, maxPeriod, minLength, minRepeats } = this;
    for (let i = 0; i < text.length; i++) {
      if (this.at === buffer.length) {
        buffer.copyWithin(0, this.at - maxPeriod, this.at);
        this.at = maxPeriod;
      }
      const code = text.charCodeAt(i);
      const at = this.at;
      const limit = Math.min(maxPeriod, this.written);
      for (let p = 1; p <= limit; p++) {
        if (buffer[at - p] !== code) {
          runs[p] = 0;
          continue;
        }
        const run = ++runs[p]!;
        // The tail is p characters, then `run` more each equal to the one p before: run + p in all.
        if (run + p >= minLength && run + p >= p * minRepeats) {
          buffer[at] = code;
          this.at++;
          this.written++;
          this.found = { unit: this.unit(p), repeats: Math.floor((run + p) / p) };
          return this.found;
        }
      }
      buffer[at] = code;
      this.at++;
      this.written++;
    }
    return null;
  }

  /**
   * Separates two outputs (two tool calls, a call after a message): text never repeats across the
   * mark, but a call written again whole still repeats as a unit (the mark included).
   */
  boundary(): Repetition | null {
    return this.push("\u0000");
  }

  /**
   * The repeated unit: the last `p` characters written, turned to start a line when one starts in
   * it (so a repeated line reads as that line), at most 80 characters of it.
   */
  private unit(p: number): string {
    let unit = String.fromCharCode(...this.buffer.subarray(this.at - p, this.at));
    const line = unit.indexOf("\n");
    if (line !== -1 && line < unit.length - 1) unit = unit.slice(line + 1) + unit.slice(0, line + 1);
    return unit.length > 80 ? `${unit.slice(0, 79)}…` : unit;
  }
}
