/** Bounds of what {@link RepetitionGuard} calls a loop. */
export interface RepetitionGuardOptions {
  /** The longest repeated unit looked for, in characters. Default: 256. */
  maxPeriod?: number;
  /** Characters the repeating tail must span at least. Default: 600. */
  minLength?: number;
  /** Whole repeats of the unit the tail must hold at least. Default: 8. */
  minRepeats?: number;
}

/** What the guard saw: the repeated unit (at most 80 characters of it) and how often it came. */
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
 * the one p before (O(maxPeriod) work and memory per character, whatever the length of the reply).
 * Output that merely resembles itself (code whose lines share most of their text) never forms an
 * exact repeating tail that long, so it is not stopped.
 */
export class RepetitionGuard {
  private readonly maxPeriod: number;
  private readonly minLength: number;
  private readonly minRepeats: number;
  /** The last `maxPeriod` characters, as a ring of UTF-16 code units. */
  private readonly ring: Uint16Array;
  /** `runs[p]`: how many characters in a row equalled the character p before them. */
  private readonly runs: Uint32Array;
  private written = 0;
  private found: Repetition | null = null;

  constructor(options: RepetitionGuardOptions = {}) {
    this.maxPeriod = options.maxPeriod ?? 256;
    this.minLength = options.minLength ?? 600;
    this.minRepeats = options.minRepeats ?? 8;
    this.ring = new Uint16Array(this.maxPeriod + 1);
    this.runs = new Uint32Array(this.maxPeriod + 1);
  }

  /** The loop found, once one is (it stays found); null until then. */
  get repetition(): Repetition | null {
    return this.found;
  }

  /** Adds streamed text; returns the loop as soon as the text forms one, else null. */
  push(text: string): Repetition | null {
    if (this.found) return this.found;
    const size = this.ring.length;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      const at = this.written % size;
      const limit = Math.min(this.maxPeriod, this.written);
      for (let p = 1; p <= limit; p++) {
        if (this.ring[(at - p + size) % size] !== code) {
          this.runs[p] = 0;
          continue;
        }
        const run = ++this.runs[p]!;
        // The tail is p characters, then `run` more each equal to the one p before: run + p in all.
        if (run + p >= this.minLength && run + p >= p * this.minRepeats && !this.found) {
          this.ring[at] = code;
          this.written++;
          this.found = { unit: this.unit(p), repeats: Math.floor((run + p) / p) };
          return this.found;
        }
      }
      this.ring[at] = code;
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

  /** The last `p` characters written, at most 80 of them. */
  private unit(p: number): string {
    const size = this.ring.length;
    let unit = "";
    for (let k = p; k >= 1 && unit.length < 80; k--) {
      unit += String.fromCharCode(this.ring[(this.written - k + size) % size]!);
    }
    return unit;
  }
}
