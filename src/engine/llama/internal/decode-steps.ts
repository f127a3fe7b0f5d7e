/**
 * One decode step for every stream generating on node-llama-cpp's batched path, as llama-server's
 * parallel slots share one batch per step.
 *
 * node-llama-cpp batches the decodes queued within one event-loop cycle, but each stream queues its
 * next token only once its consumer has taken the last one. Once two streams are out of step (one
 * started decoding while the other was still evaluating its prompt), the second's decode is queued
 * while the first's batch runs and takes the context as soon as that batch ends, before the first
 * stream has queued again: the streams then alternate, one per batch, for the rest of the reply.
 * Measured on the 135M synthetic shape, 32 tokens per stream: with 2 streams, 44 of 54 batches
 * carried one stream; with 4, 37 of 42 carried three.
 *
 * Here each stream waits, before asking for its next token, until every stream has its last token
 * (no step is still running) and has asked for the next one: they are released together and land in
 * one batch. A stream whose consumer is still busy is waited for at most about one step (waiting
 * longer costs more than the step it would save); one that misses a step this way is not waited for
 * again until it asks for a token of its own accord.
 */
export class DecodeSteps {
  /** Steps released so far, and how many of them carried several streams (tests read them). */
  readonly counts = { steps: 0, shared: 0 };
  private readonly members = new Set<StepMember>();
  /** How long a step takes, from release to the last of its tokens (a moving average). */
  private stepMs = 0;
  private releasedAt = 0;
  private lastStepEnd = 0;
  private timer: NodeJS.Timeout | undefined;

  /** A stream begins generating on the batched path; it leaves when it is done. */
  join(): StepMember {
    const member = new StepMember(this);
    this.members.add(member);
    return member;
  }

  /** @internal */
  leave(member: StepMember): void {
    this.members.delete(member);
    this.check();
  }

  /** @internal */
  arrived(): void {
    this.check();
  }

  /** @internal */
  received(): void {
    for (const member of this.members) if (member.state === "inFlight") return;
    const now = performance.now();
    const took = now - this.releasedAt;
    this.stepMs = this.stepMs === 0 ? took : this.stepMs * 0.8 + took * 0.2;
    this.lastStepEnd = now;
    this.check();
  }

  private check(): void {
    const members = [...this.members];
    // A step still runs: its streams come back when it ends, and go on with the others.
    if (members.some((member) => member.state === "inFlight")) return;
    const waiting = members.filter((member) => member.state === "waiting");
    if (waiting.length === 0) return;
    const busy = members.filter((member) => member.state === "consuming" && !member.lagging);
    if (busy.length > 0) {
      const left = this.lastStepEnd + this.stepMs - performance.now();
      if (left > 0) {
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.check();
        }, Math.ceil(left));
        return;
      }
      for (const member of busy) member.lagging = true;
    }
    clearTimeout(this.timer);
    this.timer = undefined;
    this.releasedAt = performance.now();
    this.counts.steps++;
    if (waiting.length > 1) this.counts.shared++;
    for (const member of waiting) member.release();
  }
}

/** One stream's place in the steps. */
export class StepMember {
  state: "consuming" | "waiting" | "inFlight" = "consuming";
  /** Missed a step while its consumer was busy: not waited for until it asks again. */
  lagging = false;
  wake: (() => void) | undefined;

  constructor(private readonly steps: DecodeSteps) {}

  /** Resolves when this stream may ask for its next token, in the same step as the others. */
  next(): Promise<void> {
    this.state = "waiting";
    this.lagging = false;
    const released = new Promise<void>((resolve) => {
      this.wake = resolve;
    });
    this.steps.arrived();
    return released;
  }

  /** Its token came back. */
  received(): void {
    this.state = "consuming";
    this.steps.received();
  }

  leave(): void {
    this.steps.leave(this);
  }

  /** @internal */
  release(): void {
    this.state = "inFlight";
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
