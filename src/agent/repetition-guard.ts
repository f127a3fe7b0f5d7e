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
 * Cheap per token, with no rescans: a run is kept for every period p (how many characters in a
 * row equalled the one p before), but a character visits only the periods at which the same
 * character was written within the last `maxPeriod` (found through a chain of earlier positions of
 * each character); a run not extended at the previous character counts as broken. Ordinary text
 * costs a few steps a character, and O(maxPeriod) memory whatever the length of the reply.
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
   * are moved to its start when it fills (amortised O(1) per character).
   */
  private readonly buffer: Uint16Array;
  /** Where the next character goes in {@link buffer}. */
  private at = 0;
  /** `runs[p]`: how many characters in a row equalled the character p before them, ending at `runEnds[p]`. */
  private readonly runs: Uint32Array;
  private readonly runEnds: Float64Array;
  /** The latest position of each character written. */
  private readonly latest = new Map<number, number>();
  /** `earlier[pos % (maxPeriod + 1)]`: the position before `pos` holding the same character, or -1. */
  private readonly earlier: Float64Array;
  private written = 0;
  private found: Repetition | null = null;

  constructor(options: RepetitionGuardOptions = {}) {
    this.maxPeriod = options.maxPeriod ?? 256;
    this.minLength = options.minLength ?? 600;
    this.minRepeats = options.minRepeats ?? 8;
    this.buffer = new Uint16Array(this.maxPeriod * 8);
    this.runs = new Uint32Array(this.maxPeriod + 1);
    this.runEnds = new Float64Array(this.maxPeriod + 1).fill(-2);
    this.earlier = new Float64Array(this.maxPeriod + 1);
  }

  /** The loop found, once one is (it stays found); null until then. */
  get repetition(): Repetition | null {
    return this.found;
  }

  /** Adds streamed text; returns the loop as soon as the text forms one, else null. */
  push(text: string): Repetition | null {
    if (this.found) return this.found;
    const { buffer, runs, runEnds, earlier, latest, maxPeriod, minLength, minRepeats } = this;
    const ring = maxPeriod + 1;
    for (let i = 0; i < text.length; i++) {
      if (this.at === buffer.length) {
        buffer.copyWithin(0, this.at - maxPeriod, this.at);
        this.at = maxPeriod;
      }
      const code = text.charCodeAt(i);
      const pos = this.written;
      const last = latest.get(code) ?? -1;
      buffer[this.at] = code;
      this.at++;
      this.written++;
      earlier[pos % ring] = last;
      latest.set(code, pos);
      for (let q = last; q >= 0 && pos - q <= maxPeriod; q = earlier[q % ring]!) {
        const p = pos - q;
        const run = runEnds[p] === pos - 1 ? runs[p]! + 1 : 1;
        runs[p] = run;
        runEnds[p] = pos;
        // The tail is p characters, then `run` more each equal to the one p before: run + p in all.
        if (run + p >= minLength && run + p >= p * minRepeats) {
          this.found = { unit: this.unit(p), repeats: Math.floor((run + p) / p) };
          return this.found;
        }
      }
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
