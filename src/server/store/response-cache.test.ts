import { describe, expect, test } from "vitest";
import type { StoredResponse } from "../response-store.js";
import { ResponseCache } from "./response-cache.js";

/** A stored turn of about `size` bytes (as JSON). */
function turn(id: string, size: number, parent: StoredResponse | null = null): StoredResponse {
  return {
    id,
    parent,
    messages: [{ role: "user", content: "x".repeat(size) }],
    conversation: "conv",
    model: "m",
    settings: {
      instructions: null,
      tools: [],
      rawTools: [],
      toolChoice: null,
      maxOutputTokens: null,
      temperature: null,
      topP: null,
      store: true,
      metadata: {},
    },
    pendingCalls: [],
  };
}

describe("ResponseCache byte budget", () => {
  test("evicts the least recently used responses first once their bytes pass the budget", () => {
    const store = new ResponseCache({ maxBytes: 2_900 });
    store.put(turn("a", 1000));
    store.put(turn("b", 1000));
    expect(store.get("a")?.id).toBe("a"); // a is now more recent than b
    store.put(turn("c", 1000));
    expect(store.get("b")).toBeUndefined();
    expect(store.get("a")?.id).toBe("a");
    expect(store.get("c")?.id).toBe("c");
    expect(store.bytes).toBeLessThanOrEqual(2_900);
  });

  test("a response larger than the whole budget is not kept, and nothing is counted for it", () => {
    const store = new ResponseCache({ maxBytes: 500 });
    store.put(turn("big", 1000));
    expect(store.get("big")).toBeUndefined();
    expect(store.size).toBe(0);
    expect(store.bytes).toBe(0);
  });

  test("earlier turns a kept response still needs stay counted after their own eviction", () => {
    const store = new ResponseCache({ maxEntries: 1 });
    const first = turn("r1", 1000);
    store.put(first);
    const alone = store.bytes;
    store.put(turn("r2", 1000, first));
    expect(store.get("r1")).toBeUndefined(); // evicted by count...
    expect(store.bytes).toBeGreaterThan(1.9 * alone); // ...but r2 still holds its turn
    store.put(turn("other", 10));
    expect(store.bytes).toBeLessThan(alone / 2); // r2 gone: nothing holds r1 any more
  });

  test("a chain past the budget is evicted oldest first until what is held fits", () => {
    const store = new ResponseCache({ maxBytes: 5_000 });
    const r1 = turn("r1", 2000);
    store.put(r1);
    const r2 = turn("r2", 2000, r1);
    store.put(r2);
    store.put(turn("x", 500));
    store.put(turn("r3", 2000, r2)); // held: r1 + r2 + r3 + x > 5,000
    expect(store.bytes).toBeLessThanOrEqual(5_000);
    expect(store.get("r3")).toBeUndefined();
  });

  test("putting the same response again counts it once; the count cap still holds", () => {
    const store = new ResponseCache({ maxEntries: 2 });
    const a = turn("a", 100);
    store.put(a);
    const once = store.bytes;
    store.put(a);
    expect(store.bytes).toBe(once);
    store.put(turn("b", 100));
    store.put(turn("c", 100));
    expect(store.size).toBe(2);
    expect(store.get("a")).toBeUndefined();
  });
});

describe("ResponseCache expiry", () => {
  test("a response not used for the TTL expires; reading or continuing it keeps it (and its chain) alive", () => {
    let now = 0;
    const store = new ResponseCache({ ttlMs: 1_000, clock: () => now });
    const first = turn("r1", 100);
    store.put(first);
    now = 900;
    expect(store.get("r1")?.id).toBe("r1"); // read: its idle time starts again
    now = 1_800;
    store.put(turn("r2", 100, first));
    expect(store.get("r1")?.id).toBe("r1");
    now = 2_799;
    expect(store.get("r2")?.messages).toHaveLength(1);
    now = 3_800;
    expect(store.get("r2")).toBeUndefined();
    expect(store.get("r1")).toBeUndefined();
  });

  test("expired responses are dropped from the byte count at the next put", () => {
    let now = 0;
    const store = new ResponseCache({ ttlMs: 1_000, clock: () => now });
    store.put(turn("old", 1000));
    const held = store.bytes;
    now = 1_000;
    store.put(turn("new", 10));
    expect(store.size).toBe(1);
    expect(store.bytes).toBeLessThan(held);
  });

  test("ttlMs 0 never expires", () => {
    let now = 0;
    const store = new ResponseCache({ ttlMs: 0, clock: () => now });
    store.put(turn("a", 10));
    now = 10 ** 12;
    expect(store.get("a")?.id).toBe("a");
  });
});
