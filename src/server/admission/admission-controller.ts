import { SparkError } from "../../protocol/errors.js";
import { FairQueue } from "./fair-queue.js";
import { RateLimiter, type RateLimits } from "./rate-limiter.js";

export interface AdmissionLimits extends RateLimits {
  /** Requests running at once; more wait in the queue. Default: unlimited. */
  maxConcurrent?: number;
  /** Requests waiting at once; beyond it a request is refused with `queue_full` (429). Default: unlimited. */
  maxQueue?: number;
  /** Longest wait in the queue; then the request fails with `queue_timeout` (503). Default: none. */
  queueTimeoutMs?: number;
}

export interface AdmitOptions {
  /** Whose budget and which fair-queue lane: the API key (digest) or `anonymous`. */
  key: string;
  /** Aborting leaves the queue; `granted` rejects with `cancelled`. */
  signal?: AbortSignal;
  /** Told the place in the queue (1 = next) when waiting, and again whenever it changes. */
  onPosition?: (position: number) => void;
}

/** A running slot: release it exactly once when the response ends (later calls do nothing). */
export interface Permit {
  /** Time spent in the queue. */
  readonly waitedMs: number;
  /** Charges tokens a response used to the key's tokens-per-minute budget. */
  charge(tokens: number): void;
  release(): void;
}

/** A place in line, handed out at once; `granted` settles exactly once. */
export interface Ticket {
  /** 0 once admitted, else the place in the queue (1 = next). */
  readonly position: number;
  /** Resolves with the permit, or rejects (`queue_timeout`, `cancelled`, `model_unavailable` on close). */
  readonly granted: Promise<Permit>;
  /** Calls `listener` whenever the place changes from now on (not with the current one). */
  watch(listener: (position: number) => void): void;
  /** Leaves the queue (`granted` rejects with `cancelled`); does nothing once admitted. */
  cancel(): void;
}

export interface AdmissionHooks {
  /** A request got its slot after waiting `waitedMs` (0 when it did not wait). */
  admitted?: (waitedMs: number) => void;
  /** A request was refused or gave up (rate_limited, queue_full, queue_timeout). */
  rejected?: (error: SparkError) => void;
  /** Clock for rate limits. Default: `performance.now`. */
  now?: () => number;
  /** Per-key buckets shared with other controllers (one per tier). Default: this controller's own. */
  rateLimiter?: RateLimiter;
}

interface Waiter {
  key: string;
  enqueuedAt: number;
  position: number;
  listeners: ((position: number) => void)[];
  resolve: (permit: Permit) => void;
  reject: (error: SparkError) => void;
  cleanup: () => void;
}

/**
 * Admission for one model (of one tier): at most `maxConcurrent` requests run; the rest wait in a
 * bounded queue, fair between keys, each told its place as it changes; per-key token buckets
 * limit requests and tokens per minute. Every request is answered exactly once: admitted,
 * refused at once (`rate_limited`, `queue_full`), or failed after waiting (`queue_timeout`,
 * `cancelled`) — never dropped.
 */
export class AdmissionController {
  private readonly queue = new FairQueue<Waiter>();
  private readonly limiter: RateLimiter;
  private readonly maxConcurrent: number;
  private readonly maxQueue: number;
  private active = 0;
  /** Moving average of how long a permit is held, for Retry-After estimates. */
  private holdMs = 1000;
  private closed = false;

  constructor(
    private readonly limits: AdmissionLimits = {},
    private readonly hooks: AdmissionHooks = {},
  ) {
    this.limiter = hooks.rateLimiter ?? new RateLimiter(limits, hooks.now);
    this.maxConcurrent = limits.maxConcurrent ?? Number.POSITIVE_INFINITY;
    this.maxQueue = limits.maxQueue ?? Number.POSITIVE_INFINITY;
  }

  /** Requests holding a permit now. */
  get running(): number {
    return this.active;
  }

  /** Requests in the queue now. */
  get waiting(): number {
    return this.queue.size;
  }

  /**
   * Takes a place: admitted at once when there is room, else queued. Throws at once (nothing
   * queued, nothing charged) with `rate_limited` or `queue_full`, both carrying Retry-After.
   */
  request(options: AdmitOptions): Ticket {
    if (this.closed) throw new SparkError("model_unavailable", "The server is shutting down.");
    if (options.signal?.aborted) throw new SparkError("cancelled", "The request was cancelled.");
    const mustWait = this.active >= this.maxConcurrent || this.queue.size > 0;
    if (mustWait && this.queue.size >= this.maxQueue) {
      throw this.reject(
        new SparkError(
          "queue_full",
          `The server is busy: ${this.queue.size} requests are already waiting. Retry later.`,
          { retryAfterSeconds: this.estimateWaitSeconds() },
        ),
      );
    }
    try {
      this.limiter.check(options.key);
    } catch (error) {
      throw this.reject(error as SparkError);
    }
    if (!mustWait) {
      const permit = this.grant(options.key, 0);
      return {
        position: 0,
        granted: Promise.resolve(permit),
        watch: () => {},
        cancel: () => {},
      };
    }
    return this.enqueue(options);
  }

  /** {@link request}, then waits for the slot; `onPosition` hears the first place and every change. */
  async admit(options: AdmitOptions): Promise<Permit> {
    const ticket = this.request(options);
    const { onPosition } = options;
    if (onPosition && ticket.position > 0) {
      onPosition(ticket.position);
      ticket.watch(onPosition);
    }
    return ticket.granted;
  }

  /** Fails every waiting request with `model_unavailable` and refuses new ones. Idempotent. */
  close(): void {
    this.closed = true;
    for (let waiter = this.queue.shift(); waiter; waiter = this.queue.shift()) {
      waiter.cleanup();
      waiter.reject(new SparkError("model_unavailable", "The server is shutting down."));
    }
  }

  private enqueue(options: AdmitOptions): Ticket {
    let resolve!: (permit: Permit) => void;
    let reject!: (error: SparkError) => void;
    const granted = new Promise<Permit>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // Nobody may be awaiting yet when it fails; the awaiting caller still sees the rejection.
    granted.catch(() => {});
    let settled = false;
    const waiter: Waiter = {
      key: options.key,
      enqueuedAt: performance.now(),
      position: 0,
      listeners: [],
      resolve: (permit) => {
        if (settled) {
          permit.release();
          return;
        }
        settled = true;
        resolve(permit);
      },
      reject: (error) => {
        if (settled) return;
        settled = true;
        reject(error);
      },
      cleanup: () => {},
    };
    const leave = (error: SparkError) => {
      if (!this.queue.remove(waiter.key, waiter)) return;
      waiter.cleanup();
      waiter.reject(error);
      this.updatePositions();
    };
    const onAbort = () => leave(new SparkError("cancelled", "The request was cancelled while queued."));
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const timeoutMs = this.limits.queueTimeoutMs;
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            const error = new SparkError(
              "queue_timeout",
              `The request waited ${timeoutMs} ms in the queue without getting a turn: the server is overloaded. Retry later.`,
              { retryAfterSeconds: this.estimateWaitSeconds() },
            );
            if (this.queue.remove(waiter.key, waiter)) {
              waiter.cleanup();
              this.reject(error);
              waiter.reject(error);
              this.updatePositions();
            }
          }, timeoutMs);
    waiter.cleanup = () => {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    };
    this.queue.push(options.key, waiter);
    this.updatePositions();
    return {
      get position() {
        return waiter.position;
      },
      granted,
      watch: (listener) => {
        waiter.listeners.push(listener);
      },
      cancel: () => onAbort(),
    };
  }

  private grant(key: string, waitedMs: number): Permit {
    this.active++;
    this.hooks.admitted?.(waitedMs);
    const started = performance.now();
    let released = false;
    return {
      waitedMs,
      charge: (tokens) => this.limiter.charge(key, tokens),
      release: () => {
        if (released) return;
        released = true;
        this.active--;
        this.holdMs = this.holdMs * 0.8 + (performance.now() - started) * 0.2;
        this.pump();
      },
    };
  }

  /** Admits waiting requests while there is room, in fair order. */
  private pump(): void {
    let changed = false;
    while (this.active < this.maxConcurrent) {
      const waiter = this.queue.shift();
      if (!waiter) break;
      changed = true;
      waiter.cleanup();
      waiter.position = 0;
      waiter.resolve(this.grant(waiter.key, performance.now() - waiter.enqueuedAt));
    }
    if (changed) this.updatePositions();
  }

  private updatePositions(): void {
    for (const [waiter, position] of this.queue.positions()) {
      if (waiter.position === position) continue;
      waiter.position = position;
      for (const listener of waiter.listeners) listener(position);
    }
  }

  private estimateWaitSeconds(): number {
    const slots = Number.isFinite(this.maxConcurrent) ? this.maxConcurrent : 1;
    const rounds = Math.ceil((this.queue.size + 1) / slots);
    return Math.max(1, Math.ceil((rounds * this.holdMs) / 1000));
  }

  private reject(error: SparkError): SparkError {
    this.hooks.rejected?.(error);
    return error;
  }
}
