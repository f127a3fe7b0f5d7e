import { SparkError } from "../../protocol/errors.js";
import { TokenBucket } from "./token-bucket.js";

export interface RateLimits {
  /** Requests a key may start per minute (a bucket of this size, refilled continuously). Default: unlimited. */
  requestsPerMinute?: number;
  /**
   * Tokens a key may use per minute: the input tokens a response evaluated (cached ones are
   * free: they cost no compute) plus its output tokens, charged when it ends. A key in debt is
   * refused until refill repays it. Default: unlimited.
   */
  tokensPerMinute?: number;
}

/** Buckets kept before full (idle) ones are forgotten. */
const PRUNE_AT = 4096;

/** Per-key token buckets for requests and tokens. */
export class RateLimiter {
  private readonly requests = new Map<string, TokenBucket>();
  private readonly tokens = new Map<string, TokenBucket>();

  constructor(
    private readonly limits: RateLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get limited(): boolean {
    return this.limits.requestsPerMinute !== undefined || this.limits.tokensPerMinute !== undefined;
  }

  /**
   * Takes one request from `key`'s budget, or throws `rate_limited` with the seconds until a retry
   * can pass. A refused request takes nothing.
   */
  check(key: string): void {
    const tokens = this.bucket(this.tokens, this.limits.tokensPerMinute, key);
    if (tokens && tokens.available < 1) {
      throw new SparkError(
        "rate_limited",
        `Rate limit reached: more than ${this.limits.tokensPerMinute} tokens per minute for this API key.`,
        { retryAfterSeconds: tokens.secondsUntil(1) },
      );
    }
    const requests = this.bucket(this.requests, this.limits.requestsPerMinute, key);
    if (requests && !requests.take(1)) {
      throw new SparkError(
        "rate_limited",
        `Rate limit reached: more than ${this.limits.requestsPerMinute} requests per minute for this API key.`,
        { retryAfterSeconds: requests.secondsUntil(1) },
      );
    }
  }

  /** Charges the tokens a finished response used. */
  charge(key: string, tokens: number): void {
    if (tokens > 0) this.bucket(this.tokens, this.limits.tokensPerMinute, key)?.charge(tokens);
  }

  private bucket(
    buckets: Map<string, TokenBucket>,
    perMinute: number | undefined,
    key: string,
  ): TokenBucket | undefined {
    if (perMinute === undefined) return undefined;
    let bucket = buckets.get(key);
    if (!bucket) {
      if (buckets.size >= PRUNE_AT) for (const [k, b] of buckets) if (b.full) buckets.delete(k);
      bucket = new TokenBucket(perMinute, this.now);
      buckets.set(key, bucket);
    }
    return bucket;
  }
}
