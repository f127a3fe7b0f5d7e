import type {
  DraftOptions,
  DraftRequest,
  DraftResult,
  Engine,
  EngineEvent,
  EngineInfo,
  GenerateOptions,
  GenerateRequest,
  GenerateResult,
} from "../../engine.js";

/** How one generation on the probed engine ended: its result, or the error it threw. */
export type ProbeOutcome = { request: GenerateRequest; result?: GenerateResult; error?: unknown };

/**
 * Wraps an engine (the test double an upstream server runs) and reports every generation it ran:
 * the request as the upstream received it, and how it ended. Tests await {@link ended} instead of
 * sleeping until the upstream has stopped.
 */
export class ProbeEngine implements Engine {
  readonly requests: GenerateRequest[] = [];
  readonly outcomes: ProbeOutcome[] = [];
  private waiters: { index: number; resolve: (outcome: ProbeOutcome) => void }[] = [];
  running = 0;

  constructor(private readonly inner: Engine) {}

  get info(): EngineInfo {
    return this.inner.info;
  }

  async *generate(request: GenerateRequest, options?: GenerateOptions): AsyncGenerator<EngineEvent> {
    this.requests.push(request);
    const outcome: ProbeOutcome = { request };
    this.running++;
    try {
      for await (const event of this.inner.generate(request, options)) {
        if (event.type === "done") outcome.result = event.result;
        yield event;
      }
    } catch (error) {
      outcome.error = error;
      throw error;
    } finally {
      this.running--;
      this.outcomes.push(outcome);
      const index = this.outcomes.length - 1;
      this.waiters = this.waiters.filter((waiter) => {
        if (waiter.index !== index) return true;
        waiter.resolve(outcome);
        return false;
      });
    }
  }

  draft(request: DraftRequest, options?: DraftOptions): Promise<DraftResult> {
    return this.inner.draft(request, options);
  }

  /** Resolves when the `index`-th generation (0-based, in order of ending) has ended. */
  ended(index: number): Promise<ProbeOutcome> {
    const done = this.outcomes[index];
    if (done) return Promise.resolve(done);
    return new Promise((resolve) => this.waiters.push({ index, resolve }));
  }

  async dispose(): Promise<void> {
    await this.inner.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}
