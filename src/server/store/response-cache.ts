import {
  type ResponseStoreOptions,
  STORE_DEFAULTS,
  type StoredResponse,
  turnJson,
} from "../response-store.js";

export interface ResponseCacheOptions extends ResponseStoreOptions {
  /** Milliseconds now, for expiry. Default: `Date.now`. */
  clock?: () => number;
}

interface Held {
  bytes: number;
  /** Kept children holding this entry through `parent`, plus one while it is kept itself. */
  refs: number;
}

interface Kept {
  entry: StoredResponse;
  /** When it was last stored or read. */
  touched: number;
}

/**
 * Responses kept in this process for `previous_response_id`, least recently used evicted first,
 * bounded by count, bytes and idle time. An evicted response whose turns a kept one still needs (its
 * `parent` chain) stays counted until no kept response needs it, so the byte budget bounds the
 * memory really held. Synchronous: the in-memory store and each WebSocket's own cache use it.
 */
export class ResponseCache {
  private readonly entries = new Map<string, Kept>();
  private readonly held = new Map<StoredResponse, Held>();
  private heldBytes = 0;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly ttlMs: number;
  private readonly clock: () => number;

  constructor(options: ResponseCacheOptions = {}) {
    this.maxEntries = options.maxEntries ?? STORE_DEFAULTS.maxEntries;
    this.maxBytes = options.maxBytes ?? STORE_DEFAULTS.maxBytes;
    this.ttlMs = options.ttlMs ?? STORE_DEFAULTS.ttlMs;
    this.clock = options.clock ?? Date.now;
  }

  get(id: string): StoredResponse | undefined {
    const kept = this.entries.get(id);
    if (!kept) return undefined;
    this.entries.delete(id);
    const now = this.clock();
    if (this.expired(kept, now)) {
      this.release(kept.entry);
      return undefined;
    }
    this.entries.set(id, kept);
    this.touch(kept.entry, now);
    return kept.entry;
  }

  put(entry: StoredResponse): void {
    if (this.chainBytes(entry) > this.maxBytes) return;
    const previous = this.entries.get(entry.id);
    if (previous) {
      this.entries.delete(entry.id);
      this.release(previous.entry);
    }
    const now = this.clock();
    this.entries.set(entry.id, { entry, touched: now });
    this.hold(entry);
    this.touch(entry, now);
    // Least recently used first, which is also (but for earlier turns kept alive by a later one)
    // the order they expire in; the rest expire when read.
    for (const [oldestId, oldest] of this.entries) {
      const over = this.entries.size > this.maxEntries || this.heldBytes > this.maxBytes;
      if (!over && !this.expired(oldest, now)) break;
      this.entries.delete(oldestId);
      this.release(oldest.entry);
    }
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes held: kept responses and the earlier turns they need. */
  get bytes(): number {
    return this.heldBytes;
  }

  /**
   * Marks the entry and the earlier turns of its chain still kept as used now (for expiry; only the
   * entry itself moves in the eviction order: the earlier turns stay held through it anyway).
   */
  private touch(entry: StoredResponse, now: number): void {
    for (let at: StoredResponse | null = entry; at; at = at.parent) {
      const kept = this.entries.get(at.id);
      if (kept?.entry === at) kept.touched = now;
    }
  }

  /** The bytes of the entry's chain, as it is held or would be. */
  private chainBytes(entry: StoredResponse): number {
    let bytes = 0;
    for (let at: StoredResponse | null = entry; at; at = at.parent)
      bytes += this.held.get(at)?.bytes ?? Buffer.byteLength(turnJson(at));
    return bytes;
  }

  private expired(kept: Kept, now: number): boolean {
    return this.ttlMs > 0 && now - kept.touched >= this.ttlMs;
  }

  private hold(entry: StoredResponse): void {
    for (let at: StoredResponse | null = entry; at; at = at.parent) {
      const held = this.held.get(at);
      if (held) {
        held.refs++;
        return;
      }
      const bytes = Buffer.byteLength(turnJson(at));
      this.held.set(at, { bytes, refs: 1 });
      this.heldBytes += bytes;
    }
  }

  private release(entry: StoredResponse): void {
    for (let at: StoredResponse | null = entry; at; at = at.parent) {
      const held = this.held.get(at);
      if (!held || --held.refs > 0) return;
      this.held.delete(at);
      this.heldBytes -= held.bytes;
    }
  }
}
