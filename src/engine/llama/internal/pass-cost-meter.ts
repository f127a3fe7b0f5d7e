/** What one native run did, as JavaScript saw it: its forward passes, draft tokens and time. */
export interface NativeRunTiming {
  /** Forward passes (one hand-over of tokens each). */
  passes: number;
  /** Draft tokens verified, over all passes. */
  drafted: number;
  /** Milliseconds from the run's start to its last pass. */
  ms: number;
}

/** Runs shorter than this say little (the first pass carries the run's start). */
const MIN_PASSES = 8;
/** Moving averages: recent runs count most, one slowed by other work does not decide alone. */
const WEIGHT = 0.3;

/**
 * What a draft token costs on this machine and model, as a share of a decode step, measured
 * end to end from native runs: a plain run gives the time of a step, a drafting run the time its
 * draft tokens added to its passes. Unlike the native loop's own measure (of `llama_decode`
 * alone), it counts everything a drafting pass costs: building the draft, the argmax at each
 * position, handing tokens over, and other threads competing for the cores.
 */
export class PassCostMeter {
  private stepMs: number | undefined;
  private cost: number | undefined;

  /** The measured cost, or undefined until a plain run and then a drafting run were seen. */
  get tokenCost(): number | undefined {
    return this.cost;
  }

  record({ passes, drafted, ms }: NativeRunTiming): void {
    if (!(passes >= MIN_PASSES) || !(ms > 0) || !Number.isFinite(ms)) return;
    if (drafted === 0) {
      const step = ms / passes;
      this.stepMs = this.stepMs === undefined ? step : this.stepMs + WEIGHT * (step - this.stepMs);
      return;
    }
    if (this.stepMs === undefined || drafted < MIN_PASSES) return;
    const measured = Math.min(2, Math.max(0.01, (ms / this.stepMs - passes) / drafted));
    this.cost = this.cost === undefined ? measured : this.cost + WEIGHT * (measured - this.cost);
  }
}
