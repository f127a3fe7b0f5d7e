import { createClient } from "redis";
import { describe, expect, test } from "vitest";
import type { StoredResponse } from "../response-store.js";
import { NO_REDIS_BINARY_REASON, startRedis } from "../test-support/redis-server.js";
import { RedisResponseStore } from "./redis-response-store.js";
import { storeKeys } from "./redis-store-scripts.js";
import { parseRedisUrl } from "./redis-url.js";

function turn(id: string, size: number, parent: StoredResponse | null = null): StoredResponse {
  return {
    id,
    parent,
    messages: [{ role: "user", content: `"quoted"\n${"x".repeat(size)}` }],
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

/** The quoted arguments of a MONITOR line (`1732.5 [0 lua] "HGET" "k" "f"`), unescaped. */
function monitorArgs(line: string): string[] {
  const args: string[] = [];
  for (const match of line.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
    args.push(
      match[1]!.replace(/\\(x[0-9a-f]{2}|.)/g, (_, escaped: string) => {
        if (escaped.startsWith("x") && escaped.length === 3)
          return String.fromCharCode(Number.parseInt(escaped.slice(1), 16));
        return { n: "\n", r: "\r", t: "\t", a: "\x07", b: "\b" }[escaped] ?? escaped;
      }),
    );
  }
  return args;
}

describe.skipIf(NO_REDIS_BINARY_REASON !== null)(
  `the store's scripts${NO_REDIS_BINARY_REASON ? ` (skipped: ${NO_REDIS_BINARY_REASON})` : ""}`,
  () => {
    test("on a Redis Cluster every script's keys share one slot, and a script touches no key it did not declare", async () => {
      const redis = await startRedis({ cluster: true });
      const socket = new URL(redis.url).pathname;
      const monitor = createClient({ socket: { path: socket, tls: false }, maintNotifications: "disabled" });
      const other = createClient({ socket: { path: socket, tls: false }, maintNotifications: "disabled" });
      monitor.on("error", () => {});
      other.on("error", () => {});
      await monitor.connect();
      await other.connect();
      const lines: string[] = [];
      let marked: () => void = () => {};
      const marker = new Promise<void>((resolve) => {
        marked = resolve;
      });
      await monitor.monitor((line) => {
        lines.push(line);
        if (line.includes('"end-of-test"')) marked();
      });
      const prefix = "cluster-test";
      const declared = new Set(storeKeys(prefix));
      const store = await RedisResponseStore.create({
        target: parseRedisUrl(redis.url),
        prefix,
        maxEntries: 3,
        maxBytes: 5_000,
        ttlMs: 60_000,
      });
      try {
        // Every path of both scripts: a chain, a read, an unknown id, eviction by count and by
        // bytes, a chain too large, an expired turn and a chain resent whole after it.
        const first = turn("r1", 10);
        await store.put(first);
        await store.put(turn("r2", 10, first));
        expect((await store.get("r2"))?.parent?.id).toBe("r1");
        expect(await store.get("unknown")).toBeUndefined();
        for (let i = 0; i < 3; i++) await store.put(turn(`x${i}`, 1_000));
        await store.put(turn("big", 6_000));
        await other.sendCommand(["ZADD", storeKeys(prefix)[3]!, "0", "x2"]);
        await store.put(turn("x3", 10, turn("x2", 1_000)));
        expect((await store.get("x3"))?.parent?.id).toBe("x2");
        await other.sendCommand(["ECHO", "end-of-test"]);
        await marker;
        const scripted = lines.filter((line) => / \[\d+ lua\] /.test(line)).map(monitorArgs);
        const names = new Set(scripted.map((args) => args[0]!.toUpperCase()));
        for (const name of ["HSET", "HGET", "ZADD", "ZPOPMIN", "ZRANGEBYSCORE", "INCR", "PEXPIRE"])
          expect(names).toContain(name);
        for (const args of scripted) {
          const keys = (await other.sendCommand(["COMMAND", "GETKEYS", ...args]).catch(() => [])) as string[];
          for (const key of keys) expect(declared, `${args[0]} ${key}`).toContain(key);
        }
        const evals = lines.filter((line) => /"EVAL(SHA)?"/i.test(line)).map(monitorArgs);
        expect(evals.length).toBeGreaterThan(0);
        for (const args of evals) expect(new Set(args.slice(3, 3 + Number(args[2])))).toEqual(declared);
      } finally {
        await store.dispose();
        monitor.destroy();
        other.destroy();
        await redis.stop();
      }
    });
  },
);
