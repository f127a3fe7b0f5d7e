import { randomUUID } from "node:crypto";
import path from "node:path";
import { describe, expect, test } from "vitest";
import WebSocket from "ws";
import { ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { SparkError } from "../../protocol/errors.js";
import { NO_REDIS_BINARY_REASON, startRedis } from "../test-support/redis-server.js";
import { startTestServer } from "../test-support/test-server.js";
import { RedisConnection } from "./redis-connection.js";
import { RedisResponseStore } from "./redis-response-store.js";
import { storeKeys } from "./redis-store-scripts.js";
import { parseRedisUrl } from "./redis-url.js";

const describeRedis = NO_REDIS_BINARY_REASON ? describe.skip : describe;

async function failure(promise: Promise<unknown>): Promise<SparkError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(SparkError);
    return error as SparkError;
  }
  throw new Error("expected a failure");
}

describeRedis(
  `the Redis store${NO_REDIS_BINARY_REASON ? ` (skipped: ${NO_REDIS_BINARY_REASON})` : ""}`,
  () => {
    test("Redis going away: clear store_unavailable errors, no crash; it is used again once back", async () => {
      const redis = await startRedis();
      const dir = path.dirname(new URL(redis.url).pathname);
      const store = await RedisResponseStore.create({ target: parseRedisUrl(redis.url) });
      try {
        expect(await store.get("resp_x")).toBeUndefined();
        await redis.kill();
        const error = await failure(store.get("resp_x"));
        expect(error.code).toBe("store_unavailable");
        expect(error.status).toBe(503);
        expect(error.message).toContain("redis.sock");
        expect((await failure(store.get("resp_x"))).code).toBe("store_unavailable");
        const again = await startRedis({ dir });
        try {
          expect(await store.get("resp_x")).toBeUndefined();
        } finally {
          await again.stop();
        }
      } finally {
        await store.dispose();
        await redis.stop();
      }
    });

    test("a password from the URL logs in; a wrong one is refused at start without showing it", async () => {
      const redis = await startRedis({ password: "open-sesame" });
      try {
        const socket = new URL(redis.url).pathname;
        const store = await RedisResponseStore.create({
          target: { ...parseRedisUrl(redis.url), password: "open-sesame" },
        });
        expect(await store.get("resp_x")).toBeUndefined();
        await store.dispose();
        const wrong = await failure(
          RedisResponseStore.create({
            target: { ...parseRedisUrl(`unix://${socket}`), password: "wrong-guess" },
          }),
        );
        expect(wrong.code).toBe("store_unavailable");
        expect(wrong.message).toMatch(/WRONGPASS|invalid/i);
        expect(wrong.message).not.toContain("wrong-guess");
        const none = await failure(RedisResponseStore.create({ target: parseRedisUrl(redis.url) }));
        expect(none.message).toMatch(/NOAUTH/);
      } finally {
        await redis.stop();
      }
    });

    test("a turn that is not Spark's JSON reads as store_unavailable, not as a crash", async () => {
      const redis = await startRedis();
      const prefix = `test:${randomUUID()}`;
      const [turns, parents] = storeKeys(prefix);
      const client = await RedisConnection.open({ target: parseRedisUrl(redis.url), scripts: {} });
      const store = await RedisResponseStore.create({ target: parseRedisUrl(redis.url), prefix });
      try {
        await client.command(["HSET", turns!, "resp_bad", "{not json"]);
        await client.command(["HSET", parents!, "resp_bad", ""]);
        const error = await failure(store.get("resp_bad"));
        expect(error.code).toBe("store_unavailable");
        expect(error.message).toContain("unreadable");
      } finally {
        await client.dispose();
        await store.dispose();
        await redis.stop();
      }
    });

    test("a turn whose earlier turn left Redis while it ran is stored with its chain resent whole", async () => {
      const redis = await startRedis();
      const prefix = `test:${randomUUID()}`;
      const expiry = storeKeys(prefix)[3]!;
      const client = await RedisConnection.open({ target: parseRedisUrl(redis.url), scripts: {} });
      const store = await RedisResponseStore.create({ target: parseRedisUrl(redis.url), prefix });
      try {
        const settings = {
          instructions: null,
          tools: [],
          rawTools: [],
          toolChoice: "auto",
          maxOutputTokens: null,
          temperature: null,
          topP: null,
          store: true,
          metadata: {},
        };
        const first = {
          id: "resp_1",
          parent: null,
          messages: [{ role: "user" as const, content: "one" }],
          conversation: "resp_1",
          model: "m",
          settings,
          pendingCalls: [],
        };
        await store.put(first);
        await client.command(["ZADD", expiry, "0", "resp_1"]); // its time is up: the next script drops it
        await store.put({
          ...first,
          id: "resp_2",
          parent: first,
          messages: [{ role: "user", content: "two" }],
        });
        const got = await store.get("resp_2");
        expect(got?.parent?.messages).toEqual([{ role: "user", content: "one" }]);
      } finally {
        await client.dispose();
        await store.dispose();
        await redis.stop();
      }
    });

    test("the server answers 503 store_unavailable while Redis is gone, and serves again when it is back", async () => {
      const redis = await startRedis();
      const dir = path.dirname(new URL(redis.url).pathname);
      const store = await RedisResponseStore.create({
        target: parseRedisUrl(redis.url),
        commandTimeoutMs: 2_000,
      });
      await using spark = await startTestServer(new ScriptedEngine(), { store });
      try {
        const first = await spark.client.responses.create({ model: "scripted", input: "one" });
        expect(first.status).toBe("completed");
        await redis.kill();
        const follow = await spark.client.responses
          .create({ model: "scripted", input: "two", previous_response_id: first.id })
          .then(
            () => null,
            (error: { status?: number; code?: string }) => error,
          );
        expect(follow?.status).toBe(503);
        expect(follow?.code).toBe("store_unavailable");
        // A new response generates, but cannot be stored: it fails rather than be lost for later turns.
        const fresh = await spark.client.responses.create({ model: "scripted", input: "three" }).then(
          () => null,
          (error: { status?: number; code?: string }) => error,
        );
        expect(fresh?.code).toBe("store_unavailable");
        // Streamed: the output streams, then the last event says the response could not be kept.
        const stream = await spark.client.responses.create({
          model: "scripted",
          input: "four",
          stream: true,
        });
        const types: string[] = [];
        const failed: (string | undefined)[] = [];
        for await (const event of stream) {
          types.push(event.type);
          if (event.type === "response.failed") failed.push(event.response.error?.code);
        }
        expect(types).toContain("response.output_text.delta");
        expect(types.at(-1)).toBe("response.failed");
        expect(failed).toEqual(["store_unavailable"]);
        // Unstored responses never touch the store.
        const unstored = await spark.client.responses.create({
          model: "scripted",
          input: "five",
          store: false,
        });
        expect(unstored.status).toBe("completed");
        const health = await fetch(`${spark.url}/healthz`);
        expect(health.status).toBe(200);
        const again = await startRedis({ dir });
        try {
          const back = await spark.client.responses.create({ model: "scripted", input: "six" });
          const next = await spark.client.responses.create({
            model: "scripted",
            input: "seven",
            previous_response_id: back.id,
          });
          expect(next.status).toBe("completed");
          expect(next.usage?.input_tokens_details).toEqual({ cached_tokens: expect.any(Number) });
        } finally {
          await again.stop();
        }
      } finally {
        await redis.stop();
      }
    });

    test("over WebSocket a chain goes on from the connection while Redis is gone; the lane hears why it was not stored", async () => {
      const redis = await startRedis();
      const store = await RedisResponseStore.create({
        target: parseRedisUrl(redis.url),
        commandTimeoutMs: 2_000,
      });
      await using spark = await startTestServer(new ScriptedEngine(), { store });
      const ws = new WebSocket(`${spark.url.replace("http", "ws")}/v1/responses`);
      const events: { type: string; response?: { id: string }; error?: { code: string } }[] = [];
      const waiting: { count: number; match: (type: string) => boolean; resolve: () => void }[] = [];
      const count = (match: (type: string) => boolean) => events.filter((e) => match(e.type)).length;
      ws.on("message", (data) => {
        events.push(JSON.parse(String(data)));
        for (const waiter of waiting.splice(0)) {
          if (count(waiter.match) >= waiter.count) waiter.resolve();
          else waiting.push(waiter);
        }
      });
      const seen = (match: (type: string) => boolean, n: number) =>
        new Promise<void>((resolve) => {
          if (count(match) >= n) resolve();
          else waiting.push({ count: n, match, resolve });
        });
      const ended = (type: string) => type === "response.completed" || type === "response.failed";
      try {
        await new Promise((resolve, reject) => {
          ws.once("open", resolve);
          ws.once("error", reject);
        });
        await redis.kill();
        ws.send(JSON.stringify({ type: "response.create", model: "scripted", input: "one" }));
        await seen((type) => type === "error", 1);
        expect(events.find((e) => e.type === "error")?.error?.code).toBe("store_unavailable");
        const first = events.find((e) => e.type === "response.completed")?.response?.id;
        expect(first).toBeDefined();
        ws.send(
          JSON.stringify({
            type: "response.create",
            model: "scripted",
            input: "two",
            previous_response_id: first,
          }),
        );
        await seen(ended, 2);
        expect(events.filter((e) => ended(e.type)).map((e) => e.type)).toEqual([
          "response.completed",
          "response.completed",
        ]);
      } finally {
        ws.close();
        await redis.stop();
      }
    });
  },
);
