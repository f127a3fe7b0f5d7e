import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  historyOf,
  type ResponseStore,
  type ResponseStoreOptions,
  type StoredResponse,
} from "../response-store.js";
import { NO_REDIS_REASON, sharedTestRedis } from "../test-support/redis-server.js";
import { MemoryResponseStore } from "./memory-response-store.js";
import { RedisResponseStore } from "./redis-response-store.js";
import { parseRedisUrl } from "./redis-url.js";

/** A stored turn of about `size` bytes (as JSON). */
function turn(id: string, size: number, parent: StoredResponse | null = null): StoredResponse {
  return {
    id,
    parent,
    messages: [{ role: "user", content: "x".repeat(size) }],
    conversation: parent?.conversation ?? id,
    model: "m",
    settings: {
      instructions: null,
      tools: [],
      rawTools: [],
      toolChoice: "auto",
      maxOutputTokens: null,
      temperature: null,
      topP: null,
      store: true,
      metadata: {},
    },
    pendingCalls: [],
  };
}

/** Lets `ms` pass: expiry is the passage of time itself (reading would keep the response alive). */
function idle(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

let redis: { url: string; stop(): Promise<void> } | null = null;
beforeAll(async () => {
  if (!NO_REDIS_REASON) redis = await sharedTestRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const kinds: {
  name: string;
  skip: string | null;
  make: (options: ResponseStoreOptions) => Promise<ResponseStore>;
}[] = [
  { name: "memory", skip: null, make: async (options) => new MemoryResponseStore(options) },
  {
    name: "redis",
    skip: NO_REDIS_REASON,
    make: (options) =>
      RedisResponseStore.create({
        ...options,
        target: parseRedisUrl(redis!.url),
        prefix: `test:${randomUUID()}:`,
      }),
  },
];

describe.each(kinds)("the response store contract: $name", ({ name, skip, make }) => {
  if (skip) {
    test.skip(`${name}: ${skip}`, () => {});
    return;
  }

  test("a chain comes back whole: every turn, its settings and pending calls, linked to its parent", async () => {
    await using store = asDisposable(await make({}));
    const first = turn("r1", 10);
    const second: StoredResponse = {
      ...turn("r2", 10, first),
      messages: [
        { role: "user", content: "read it" },
        {
          role: "assistant",
          content: "",
          toolCalls: [{ callId: "c1", name: "read_file", arguments: '{"path":"a"}' }],
        },
      ],
      pendingCalls: [{ callId: "c1", name: "read_file" }],
      settings: { ...first.settings, instructions: "be brief", metadata: { k: "v" } },
    };
    await store.put(first);
    await store.put(second);
    const got = await store.get("r2");
    expect(got?.id).toBe("r2");
    expect(got?.parent?.id).toBe("r1");
    expect(got?.parent?.parent).toBeNull();
    expect(got?.conversation).toBe("r1");
    expect(got?.pendingCalls).toEqual([{ callId: "c1", name: "read_file" }]);
    expect(got?.settings.instructions).toBe("be brief");
    expect(got?.settings.metadata).toEqual({ k: "v" });
    expect(historyOf(got ?? null)).toEqual(historyOf(second));
  });

  test("an unknown id is not found", async () => {
    await using store = asDisposable(await make({}));
    expect(await store.get("resp_nothing")).toBeUndefined();
  });

  test("a response larger than the whole byte budget is not kept", async () => {
    await using store = asDisposable(await make({ maxBytes: 500 }));
    await store.put(turn("big", 1000));
    expect(await store.get("big")).toBeUndefined();
    await store.put(turn("small", 10));
    expect((await store.get("small"))?.id).toBe("small");
  });

  test("a chain whose turns together pass the budget is not kept, its earlier turns are", async () => {
    await using store = asDisposable(await make({ maxBytes: 1_500 }));
    const first = turn("r1", 1000);
    await store.put(first);
    await store.put(turn("r2", 1000, first));
    expect(await store.get("r2")).toBeUndefined();
    expect((await store.get("r1"))?.id).toBe("r1");
  });

  test("past the byte budget the least recently used responses go first", async () => {
    await using store = asDisposable(await make({ maxBytes: 2_900 }));
    await store.put(turn("a", 1000));
    await store.put(turn("b", 1000));
    expect((await store.get("a"))?.id).toBe("a"); // a is now more recent than b
    await store.put(turn("c", 1000));
    expect(await store.get("b")).toBeUndefined();
    expect((await store.get("a"))?.id).toBe("a");
    expect((await store.get("c"))?.id).toBe("c");
  });

  test("past the count the least recently used responses go first", async () => {
    await using store = asDisposable(await make({ maxEntries: 2 }));
    await store.put(turn("a", 10));
    await store.put(turn("b", 10));
    await store.put(turn("b", 10)); // the same response again counts once
    await store.put(turn("c", 10));
    expect(await store.get("a")).toBeUndefined();
    expect((await store.get("b"))?.id).toBe("b");
    expect((await store.get("c"))?.id).toBe("c");
  });

  test("under eviction pressure a chain is read whole or not at all", async () => {
    await using store = asDisposable(await make({ maxBytes: 4_000 }));
    let at: StoredResponse | null = null;
    for (let i = 0; i < 3; i++) {
      at = turn(`r${i}`, 600, at);
      await store.put(at);
    }
    for (let i = 0; i < 6; i++) await store.put(turn(`x${i}`, 600));
    const got = await store.get("r2");
    if (got) expect(historyOf(got)).toHaveLength(3);
    const last = await store.get("x5");
    expect(last?.id).toBe("x5");
  });

  test("a response unused for the TTL expires; continuing it first keeps its chain", async () => {
    await using store = asDisposable(await make({ ttlMs: 400 }));
    const first = turn("r1", 10);
    await store.put(first);
    await store.put(turn("r2", 10, first));
    expect((await store.get("r2"))?.parent?.id).toBe("r1");
    await idle(250);
    expect((await store.get("r2"))?.parent?.id).toBe("r1"); // read: both live on
    await idle(250);
    expect((await store.get("r1"))?.id).toBe("r1"); // 500 ms after its put, kept alive by the read
    await idle(600);
    expect(await store.get("r2")).toBeUndefined();
    expect(await store.get("r1")).toBeUndefined();
  });
});

function asDisposable(store: ResponseStore): ResponseStore & AsyncDisposable {
  return Object.assign(store, { [Symbol.asyncDispose]: () => store.dispose() });
}
