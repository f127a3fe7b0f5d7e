import type { ResponseStore, StoredResponse } from "../response-store.js";
import { ResponseCache, type ResponseCacheOptions } from "./response-cache.js";

/** The embedded default: the response store in this process's memory (see {@link ResponseCache}). */
export class MemoryResponseStore implements ResponseStore {
  readonly shared = false;
  readonly description = "memory";
  private readonly cache: ResponseCache;

  constructor(options: ResponseCacheOptions = {}) {
    this.cache = new ResponseCache(options);
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    return this.cache.get(id);
  }

  async put(entry: StoredResponse): Promise<void> {
    this.cache.put(entry);
  }

  /** Responses kept. */
  get size(): number {
    return this.cache.size;
  }

  /** Bytes held: kept responses and the earlier turns they need. */
  get bytes(): number {
    return this.cache.bytes;
  }

  async dispose(): Promise<void> {}
}
