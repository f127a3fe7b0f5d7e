import type { Engine, GenerateResult } from "../../engine/engine.js";
import { MeteredEngine } from "../metrics/metered-engine.js";
import type { RequestRecord } from "../metrics/request-log.js";
import type { ServerMetrics, ServingLabels } from "../metrics/server-metrics.js";
import { AdmissionController, type AdmissionLimits, type Ticket } from "./admission-controller.js";
import { RateLimiter } from "./rate-limiter.js";

/** The tier of requests that name none. */
export const DEFAULT_TIER = "default";

export interface AdmissionConfig extends AdmissionLimits {
  /**
   * Limits of named tiers, replacing the ones above for that tier's requests. Each tier has its
   * own queues (one per model) and its own per-key budgets. Default: none (every request is in
   * the `default` tier, limited by the fields above).
   */
  tiers?: Record<string, AdmissionLimits>;
}

export interface EnterOptions {
  /** The engine the request resolved to. */
  engine: Engine;
  /** The rate-limit key: see `requestKey`. */
  key: string;
  /** Default: the engine's id when `tiers` has it, else {@link DEFAULT_TIER}. */
  tier?: string;
  /** Aborting while queued leaves the queue (`ready` rejects with `cancelled`). */
  signal?: AbortSignal;
  /** The request's log record: gets model, tier, key and queue time. */
  record?: RequestRecord;
}

/** One request's way through admission. Release it when it ends (idempotent; `using` does it). */
export interface Admission extends Disposable {
  /** The engine to run on: metered, and charging the tokens used to the key's budget. */
  readonly engine: Engine;
  /** {@link engine}, writing into another log record (a steered successor's). */
  meter(record: RequestRecord): Engine;
  /** 0 once admitted, else the place in the queue (1 = next). */
  readonly position: number;
  /** Calls `listener` whenever the place changes from now on. */
  watch(listener: (position: number) => void): void;
  /** Resolves once admitted; rejects with `queue_timeout`, `cancelled` or `model_unavailable`. */
  readonly ready: Promise<void>;
  /** True while it holds a running slot (admitted and not released). */
  readonly held: boolean;
  /** Frees the slot, or leaves the queue when still waiting. */
  release(): void;
}

/**
 * Admission control for the whole server: one {@link AdmissionController} per tier and model
 * (concurrency is per engine), per-key rate limits per tier, and the meters every request runs
 * through. Without limits configured it admits everything at once and only meters.
 */
export class Scheduler {
  private readonly controllers = new Map<
    string,
    { controller: AdmissionController; labels: ServingLabels }
  >();
  private readonly limiters = new Map<string, RateLimiter>();

  constructor(
    private readonly config: AdmissionConfig,
    private readonly metrics: ServerMetrics,
  ) {
    metrics.registry.onCollect(() => {
      for (const { controller, labels } of this.controllers.values())
        metrics.queueDepth.set(labels, controller.waiting);
    });
  }

  /**
   * Takes the request's place at once: admitted, queued, or refused by throwing `rate_limited` or
   * `queue_full` (429 with Retry-After).
   */
  enter(options: EnterOptions): Admission {
    // A model served under a tier's name (see the config's [tiers]) runs under that tier's limits.
    const id = options.engine.info.id;
    const tier = options.tier ?? (this.config.tiers?.[id] ? id : DEFAULT_TIER);
    const labels: ServingLabels = { model: options.engine.info.id, tier };
    const { record } = options;
    record?.set({ model: labels.model, tier, key: options.key });
    const { controller } = this.controllerFor(labels);
    const ticket: Ticket = controller.request({ key: options.key, signal: options.signal });
    let permit: { release(): void; charge(tokens: number): void } | undefined;
    let released = false;
    const ready = ticket.granted.then((granted) => {
      record?.set({ queue_ms: Math.round(granted.waitedMs * 100) / 100 });
      if (released) granted.release();
      else permit = granted;
    });
    ready.catch(() => {});
    const meter = (into: RequestRecord | undefined) =>
      new MeteredEngine(options.engine, {
        metrics: this.metrics,
        labels,
        ...(into ? { record: into } : {}),
        onResult: (result) => permit?.charge(tokensUsed(result)),
      });
    const engine = meter(record);
    const release = () => {
      if (released) return;
      released = true;
      if (permit) permit.release();
      else ticket.cancel();
    };
    return {
      engine,
      get position() {
        return ticket.position;
      },
      get held() {
        return permit !== undefined && !released;
      },
      meter,
      watch: (listener) => ticket.watch(listener),
      ready,
      release,
      [Symbol.dispose]: release,
    };
  }

  /** Requests running and waiting, per tier and model. */
  load(): { tier: string; model: string; running: number; waiting: number }[] {
    return [...this.controllers.values()].map(({ controller, labels }) => ({
      ...labels,
      running: controller.running,
      waiting: controller.waiting,
    }));
  }

  /** Fails every waiting request and refuses new ones. */
  close(): void {
    for (const { controller } of this.controllers.values()) controller.close();
  }

  private controllerFor(labels: ServingLabels) {
    const id = `${labels.tier}\u0000${labels.model}`;
    let entry = this.controllers.get(id);
    if (!entry) {
      const limits = this.config.tiers?.[labels.tier] ?? this.config;
      let limiter = this.limiters.get(labels.tier);
      if (!limiter) {
        limiter = new RateLimiter(limits);
        this.limiters.set(labels.tier, limiter);
      }
      const controller = new AdmissionController(limits, {
        rateLimiter: limiter,
        admitted: (waitedMs) => this.metrics.queued(labels, waitedMs),
        rejected: (error) => this.metrics.rejected(labels, error.code),
      });
      entry = { controller, labels };
      this.controllers.set(id, entry);
    }
    return entry;
  }
}

/** What a response costs a tokens-per-minute budget: the input it evaluated plus its output. */
function tokensUsed(result: GenerateResult): number {
  const { usage } = result;
  return Math.max(0, usage.inputTokens - usage.cachedInputTokens) + usage.outputTokens;
}
