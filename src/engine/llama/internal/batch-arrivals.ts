/** The longest a batch waits for requests on their way to it. */
const MAX_WAIT_MS = 50;

/**
 * Requests on their way to their prompt's first evaluation: a sequence taken, its old cells being
 * erased, copied or restored. node-llama-cpp's next batch (its `dispatchSchedule`) waits for them,
 * at most {@link MAX_WAIT_MS}, so that requests arriving together are evaluated in one batch, as
 * llama-server's slots are. Without it the first request's prompt went alone into a batch, and the
 * others, whose erase waited for that batch's lock, missed the next one too: 8 streams arriving
 * over WebSockets on the 1.5B shape took four prompt batches instead of one.
 */
export class BatchArrivals {
  private arriving = 0;
  private readonly waiting: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;

  /** Requests on their way now (tests read it). */
  get onTheWay(): number {
    return this.arriving;
  }

  /**
   * One request is on its way; the returned function says its evaluation is queued (or that it
   * will have none). Calling it again does nothing.
   */
  arrive(): () => void {
    this.arriving++;
    let arrived = false;
    return () => {
      if (arrived) return;
      arrived = true;
      if (--this.arriving === 0) this.flush();
    };
  }

  /** node-llama-cpp's `dispatchSchedule`: dispatches at the next cycle once no request is on its way. */
  readonly schedule = (dispatch: () => void): void => {
    if (this.arriving === 0) {
      setImmediate(dispatch);
      return;
    }
    this.waiting.push(dispatch);
    this.timer ??= setTimeout(() => this.flush(), MAX_WAIT_MS).unref();
  };

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const dispatch of this.waiting.splice(0)) setImmediate(dispatch);
  }
}
