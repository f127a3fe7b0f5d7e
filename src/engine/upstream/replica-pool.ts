import { PrefixMemory } from "./internal/prefix-blocks.js";
import { describe } from "./internal/upstream-failure.js";

/** How a request without a bound replica picks one. */
export type RoutingPolicy = "prefix" | "least-loaded";

export interface ReplicaPoolOptions {
  /** The replicas' API roots (`http://host:8000/v1`), all serving the same model. At least one. */
  replicas: string[];
  /** Sent as `Authorization: Bearer <apiKey>` with health checks. Default: none. */
  apiKey?: string;
  /**
   * Checked with `GET {replica}{healthPath}`: any 2xx passes. Default: `/models` (every
   * OpenAI-compatible server answers it).
   */
  healthPath?: string;
  /** A check that takes longer fails. Default: 2000 ms. */
  healthTimeoutMs?: number;
  /**
   * Time between checks of every replica; 0 checks only when {@link ReplicaPool.checkAll} is
   * called. Default: 5000 ms.
   */
  healthIntervalMs?: number;
  /**
   * False: no health checks at all (none at start, none periodic); a replica is marked down only by
   * a failed request and back up by a served one. For a router, which answers for replicas Spark
   * does not see. Default: true.
   */
  healthChecks?: boolean;
  /** Conversations remembered for affinity (least recently used forgotten). Default: 10,000. */
  affinityCapacity?: number;
  /**
   * `prefix` scores each replica by the share of the request's prefix blocks it was sent before,
   * less its share of the load; `least-loaded` looks at load only. A conversation's own replica
   * wins either way. Default: `prefix`.
   */
  routing?: RoutingPolicy;
  /** Prefix block hashes remembered per replica (least recently used forgotten). Default: 65,536. */
  prefixCapacity?: number;
  /** Weight of load against the prefix share in the `prefix` score. Default: 1. */
  loadWeight?: number;
}

/** One replica's state as the pool sees it. */
export interface Replica {
  readonly url: string;
  /** False from a failed request or check until a check (or a request) succeeds. */
  healthy: boolean;
  /** Requests running on it now. */
  inFlight: number;
  /** Why it was last marked unhealthy. */
  lastError: string | null;
  /** The prefix blocks Spark sent it (`prefix` routing). */
  readonly prefixes: PrefixMemory;
}

/**
 * Replicas of one model, and which one serves a request: a conversation keeps going to the
 * replica that served it last (where its prefix is cached) while that one is healthy; otherwise
 * the healthy replica with the best score: the share of the request's prefix blocks it likely
 * holds, less its share of the load (Dynamo's and llm-d's KV-aware scoring), or load alone. A failed request marks its replica unhealthy until a health
 * check passes; periodic checks (`GET /models`) bring replicas back and find dead ones early.
 */
export class ReplicaPool {
  readonly replicas: readonly Replica[];
  private readonly affinity = new Map<string, Replica>();
  private readonly capacity: number;
  readonly routing: RoutingPolicy;
  private readonly timer: NodeJS.Timeout | undefined;
  /** Rotates the start of the least-loaded search so ties spread over replicas. */
  private turn = 0;
  private disposed = false;

  constructor(private readonly options: ReplicaPoolOptions) {
    if (options.replicas.length === 0) throw new Error("A replica pool needs at least one replica.");
    this.replicas = options.replicas.map((url) => ({
      url: url.replace(/\/+$/, ""),
      healthy: true,
      inFlight: 0,
      lastError: null,
      prefixes: new PrefixMemory(options.prefixCapacity ?? 65_536),
    }));
    this.capacity = options.affinityCapacity ?? 10_000;
    this.routing = options.routing ?? "prefix";
    const interval = options.healthChecks === false ? 0 : (options.healthIntervalMs ?? 5000);
    if (interval > 0) {
      this.timer = setInterval(() => void this.checkAll(), interval);
      this.timer.unref();
    }
  }

  /**
   * The replica for a request: the conversation's own while healthy, else the healthy one with
   * the best score for `blocks` (the request's prefix hashes; see the class). Replicas in
   * `exclude` (already tried) are skipped. When no healthy replica is left, an unhealthy one is
   * tried rather than none (its state may be stale); undefined when every replica is excluded.
   */
  pick(
    conversation?: string,
    exclude: ReadonlySet<Replica> = new Set(),
    blocks: readonly string[] = [],
  ): Replica | undefined {
    const own = conversation === undefined ? undefined : this.affinity.get(conversation);
    if (own?.healthy && !exclude.has(own)) return own;
    const candidates = this.replicas.filter((replica) => !exclude.has(replica));
    const healthy = candidates.filter((replica) => replica.healthy);
    const pool = healthy.length > 0 ? healthy : candidates;
    if (pool.length === 0) return undefined;
    const busiest = Math.max(...pool.map((replica) => replica.inFlight));
    const prefixWeight = this.routing === "prefix" && blocks.length > 0 ? 1 / blocks.length : 0;
    const loadWeight = this.options.loadWeight ?? 1;
    const score = (replica: Replica) =>
      prefixWeight * replica.prefixes.matched(blocks) - (loadWeight * replica.inFlight) / (busiest + 1);
    // Rotating the start spreads ties over replicas.
    const start = this.turn++ % pool.length;
    let best: Replica | undefined;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (let i = 0; i < pool.length; i++) {
      const replica = pool[(start + i) % pool.length]!;
      const value = score(replica);
      if (value > bestScore) {
        best = replica;
        bestScore = value;
      }
    }
    return best;
  }

  /** A request with prefix `blocks` was sent to `replica`: it will likely hold them. */
  sent(replica: Replica, blocks: readonly string[]): void {
    if (this.routing === "prefix") replica.prefixes.remember(blocks);
  }

  /** The replica a conversation is bound to, if any. */
  replicaOf(conversation: string): Replica | undefined {
    return this.affinity.get(conversation);
  }

  /** A request succeeded on `replica`: it is healthy, and the conversation's prefix lives there. */
  served(replica: Replica, conversation?: string): void {
    this.markHealthy(replica);
    if (conversation === undefined) return;
    this.affinity.delete(conversation);
    this.affinity.set(conversation, replica);
    if (this.affinity.size > this.capacity) this.affinity.delete(this.affinity.keys().next().value!);
  }

  /** A request failed because of `replica`: route around it until a check passes. */
  failed(replica: Replica, reason: string): void {
    replica.healthy = false;
    replica.lastError = reason;
  }

  /** Checks every replica now; nothing when health checks are off. */
  async checkAll(): Promise<void> {
    if (this.options.healthChecks === false) return;
    await Promise.all(this.replicas.map((replica) => this.check(replica)));
  }

  /** Checks one replica; true when it is healthy. */
  async check(replica: Replica): Promise<boolean> {
    if (this.disposed) return replica.healthy;
    const url = `${replica.url}${this.options.healthPath ?? "/models"}`;
    try {
      const response = await fetch(url, {
        headers: this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {},
        signal: AbortSignal.timeout(this.options.healthTimeoutMs ?? 2000),
      });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`health check answered ${response.status}`);
      this.markHealthy(replica);
      return true;
    } catch (error) {
      this.failed(replica, `health check failed: ${describe(error)}`);
      return false;
    }
  }

  /** Stops the periodic checks. Idempotent. */
  dispose(): void {
    this.disposed = true;
    clearInterval(this.timer);
  }

  private markHealthy(replica: Replica): void {
    replica.healthy = true;
    replica.lastError = null;
  }
}
