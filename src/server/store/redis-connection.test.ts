import { randomUUID } from "node:crypto";
import { createServer, type Server, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { SparkError } from "../../protocol/errors.js";
import { NO_REDIS_BINARY_REASON, NO_TLS_REDIS_REASON, startRedis } from "../test-support/redis-server.js";
import { RedisConnection } from "./redis-connection.js";
import { RedisError } from "./redis-error.js";
import { RedisResponseStore } from "./redis-response-store.js";
import { parseRedisUrl, type RedisTarget } from "./redis-url.js";

async function rejection(promise: Promise<unknown>): Promise<RedisError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(RedisError);
  return error as RedisError;
}

async function storeFailure(promise: Promise<unknown>): Promise<SparkError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SparkError);
  return error as SparkError;
}

/** The commands (arrays of bulk strings) in `data`, and the bytes left over. */
function commandsIn(data: string): { commands: string[][]; rest: string } {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const header = /^\*(\d+)\r\n/.exec(data.slice(at));
    if (!header) break;
    let next = at + header[0].length;
    const args: string[] = [];
    for (let i = 0; i < Number(header[1]); i++) {
      const bulk = /^\$(\d+)\r\n/.exec(data.slice(next));
      if (!bulk) return { commands, rest: data.slice(at) };
      const start = next + bulk[0].length;
      const end = start + Number(bulk[1]);
      if (data.length < end + 2) return { commands, rest: data.slice(at) };
      args.push(data.slice(start, end));
      next = end + 2;
    }
    commands.push(args);
    at = next;
  }
  return { commands, rest: data.slice(at) };
}

/**
 * A fake Redis on a unix socket that never answers by itself: the test answers each command it
 * received, in order, with its last argument (`answer()`), when it chooses to.
 */
class FakeRedis {
  readonly socket = path.join(os.tmpdir(), `spark-fake-redis-${randomUUID()}.sock`);
  readonly connections: Socket[] = [];
  /** Commands received and not answered yet, per connection. */
  readonly unanswered = new Map<Socket, string[][]>();
  private readonly server: Server;
  private readonly waiters: (() => void)[] = [];

  constructor() {
    this.server = createServer((connection) => {
      this.connections.push(connection);
      this.unanswered.set(connection, []);
      let buffered = "";
      connection.on("data", (chunk) => {
        const { commands, rest } = commandsIn(buffered + chunk.toString("utf8"));
        buffered = rest;
        this.unanswered.get(connection)!.push(...commands);
        this.wake();
      });
      connection.on("error", () => {});
      this.wake();
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(this.socket, resolve));
    return this;
  }

  target(): RedisTarget {
    return { address: { path: this.socket }, db: 0, shown: `unix://${this.socket}` };
  }

  /** Resolves once `test` holds (checked after every connection and every command received). */
  until(test: () => boolean): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        if (test()) resolve();
        else this.waiters.push(check);
      };
      check();
    });
  }

  /** Answers every command received on `connection` so far, in order. */
  answer(connection: Socket): void {
    const commands = this.unanswered.get(connection)!.splice(0);
    for (const args of commands) {
      const text = args.at(-1) ?? "";
      connection.write(`$${Buffer.byteLength(text)}\r\n${text}\r\n`);
    }
  }

  close(): void {
    for (const connection of this.connections) connection.destroy();
    this.server.close();
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

describe("a Redis connection's timeouts", () => {
  test("one command timing out fails that command alone: the next one on the connection gets its own reply", async () => {
    const fake = await new FakeRedis().listen();
    const connection = await RedisConnection.open({
      target: fake.target(),
      scripts: {},
      commandTimeoutMs: 1_500,
    });
    try {
      const late = await rejection(connection.command(["ECHO", "first"]));
      expect(late.code).toBe("unavailable");
      expect(late.message).toContain("did not answer within 1500 ms");
      const next = connection.command(["ECHO", "second"]);
      const [socket] = fake.connections;
      await fake.until(() => fake.unanswered.get(socket!)!.length === 2);
      fake.answer(socket!); // the first command's late reply, then the second's
      expect(await next).toBe("second");
      expect(fake.connections).toHaveLength(1);
    } finally {
      await connection.dispose();
      fake.close();
    }
  });

  test("a connection on which nothing answers any more is replaced, and the new one serves", async () => {
    const fake = await new FakeRedis().listen();
    const connection = await RedisConnection.open({
      target: fake.target(),
      scripts: {},
      commandTimeoutMs: 300,
    });
    try {
      const error = await rejection(connection.command(["ECHO", "lost"]));
      expect(error.message).toContain("did not answer within 300 ms");
      await fake.until(() => fake.connections.length === 2);
      const fresh = fake.connections[1]!;
      const reply = connection.command(["ECHO", "again"]);
      await fake.until(() => fake.unanswered.get(fresh)!.length === 1);
      fake.answer(fresh);
      expect(await reply).toBe("again");
    } finally {
      await connection.dispose();
      fake.close();
    }
  });

  test("a first connection that fails is reported at once with its reason, not retried", async () => {
    const missing = path.join(os.tmpdir(), `spark-no-redis-${randomUUID()}.sock`);
    const error = await rejection(
      RedisConnection.open({
        target: { address: { path: missing }, db: 0, shown: `unix://${missing}` },
        scripts: {},
      }),
    );
    expect(error.code).toBe("unavailable");
    expect(error.message).toBe(`Cannot reach Redis at ${missing}: ENOENT.`);
  });
});

describe.skipIf(NO_REDIS_BINARY_REASON !== null)(
  `a Redis connection to a real Redis${NO_REDIS_BINARY_REASON ? ` (skipped: ${NO_REDIS_BINARY_REASON})` : ""}`,
  () => {
    test("an error reply inside a pipeline fails its own command only; one inside an array stays an error", async () => {
      const redis = await startRedis();
      const connection = await RedisConnection.open({ target: parseRedisUrl(redis.url), scripts: {} });
      try {
        const key = `test:${randomUUID()}`;
        // Issued together, these go out in one write and come back in one read.
        const replies = await Promise.allSettled([
          connection.command(["SET", key, "v"]),
          connection.command(["HGET", key, "f"]),
          connection.command(["GET", key]),
        ]);
        expect(replies[0]).toEqual({ status: "fulfilled", value: "OK" });
        expect(replies[1]?.status).toBe("rejected");
        const wrongType = (replies[1] as PromiseRejectedResult).reason as RedisError;
        expect(wrongType).toBeInstanceOf(RedisError);
        expect(wrongType.code).toBe("reply");
        expect(wrongType.prefix).toBe("WRONGTYPE");
        expect(replies[2]).toEqual({ status: "fulfilled", value: "v" });
        const mixed = await connection.command([
          "EVAL",
          "return {'ok', redis.error_reply('ERR inside'), 7}",
          "0",
        ]);
        expect(Array.isArray(mixed)).toBe(true);
        const [ok, inside, seven] = mixed as unknown[];
        expect(ok).toBe("ok");
        expect(inside).toBeInstanceOf(RedisError);
        expect((inside as RedisError).prefix).toBe("ERR");
        expect(seven).toBe(7);
      } finally {
        await connection.dispose();
        await redis.stop();
      }
    });

    test("an ACL user logs in with its own password, and the URL's database is the one used", async () => {
      const redis = await startRedis();
      const admin = await RedisConnection.open({ target: parseRedisUrl(redis.url), scripts: {} });
      try {
        await admin.command(["ACL", "SETUSER", "spark", "on", ">user-secret", "~*", "+@all"]);
        const key = `test:${randomUUID()}`;
        const user = await RedisConnection.open({
          target: { ...parseRedisUrl(`${redis.url}?db=3`), username: "spark", password: "user-secret" },
          scripts: {},
        });
        try {
          expect(await user.command(["ACL", "WHOAMI"])).toBe("spark");
          expect(await user.command(["SET", key, "in-3"])).toBe("OK");
        } finally {
          await user.dispose();
        }
        expect(await admin.command(["GET", key])).toBeNull();
        expect(await admin.command(["SELECT", "3"])).toBe("OK");
        expect(await admin.command(["GET", key])).toBe("in-3");
        const refused = await rejection(
          RedisConnection.open({
            target: { ...parseRedisUrl(redis.url), username: "spark", password: "not-it" },
            scripts: {},
          }),
        );
        expect(refused.code).toBe("reply");
        expect(refused.prefix).toBe("WRONGPASS");
        expect(refused.message).not.toContain("not-it");
      } finally {
        await admin.dispose();
        await redis.stop();
      }
    });

    test("after Redis restarts the connection reconnects: commands in the outage fail at once, later ones go through", async () => {
      const redis = await startRedis();
      const dir = path.dirname(new URL(redis.url).pathname);
      const connection = await RedisConnection.open({ target: parseRedisUrl(redis.url), scripts: {} });
      try {
        expect(await connection.command(["PING"])).toBe("PONG");
        await redis.kill();
        for (let i = 0; i < 3; i++) {
          const error = await rejection(connection.command(["PING"]));
          expect(error.code).toBe("unavailable");
          expect(error.message).toMatch(/closed|Cannot reach Redis at .*redis\.sock: (ENOENT|ECONNREFUSED)/);
        }
        const again = await startRedis({ dir });
        try {
          expect(await connection.command(["PING"])).toBe("PONG");
          // The scripts' cache went with the old process: EVALSHA falls back to EVAL by itself.
          const store = await RedisResponseStore.create({ target: parseRedisUrl(redis.url) });
          expect(await store.get("resp_none")).toBeUndefined();
          await store.dispose();
        } finally {
          await again.stop();
        }
      } finally {
        await connection.dispose();
        await redis.stop();
      }
    });
  },
);

describe.skipIf(NO_TLS_REDIS_REASON !== null)(
  `rediss:// to a Redis with TLS${NO_TLS_REDIS_REASON ? ` (skipped: ${NO_TLS_REDIS_REASON})` : ""}`,
  () => {
    test("with its CA trusted it logs in and serves; with Node's CAs the certificate is refused without naming the password", async () => {
      const redis = await startRedis({ tls: true, password: "tls-secret" });
      try {
        const url = redis.tls!.url.replace("rediss://", "rediss://:tls-secret@");
        const store = await RedisResponseStore.create({ target: parseRedisUrl(url), tlsCa: redis.tls!.ca });
        try {
          expect(store.description).toBe(`Redis at ${url.replace("tls-secret", "***")}`);
          expect(await store.get("resp_none")).toBeUndefined();
        } finally {
          await store.dispose();
        }
        const untrusted = await storeFailure(RedisResponseStore.create({ target: parseRedisUrl(url) }));
        expect(untrusted.code).toBe("store_unavailable");
        expect(untrusted.message).toMatch(
          /Cannot reach Redis at localhost:\d+: its TLS certificate was refused \(SELF_SIGNED_CERT_IN_CHAIN; .*NODE_EXTRA_CA_CERTS\)/,
        );
        expect(untrusted.message).not.toContain("tls-secret");
        const wrong = await storeFailure(
          RedisResponseStore.create({
            target: parseRedisUrl(url.replace("tls-secret", "guessed")),
            tlsCa: redis.tls!.ca,
          }),
        );
        expect(wrong.message).toMatch(/WRONGPASS/);
        expect(wrong.message).not.toContain("guessed");
      } finally {
        await redis.stop();
      }
    });

    test("rediss:// to a plain-text Redis, and redis:// to a TLS port, fail at start", async () => {
      const plain = createServer((socket) => {
        socket.on("error", () => {});
        socket.on("data", () => socket.write("-ERR unknown command\r\n"));
      });
      await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
      const redis = await startRedis({ tls: true });
      try {
        const port = (plain.address() as { port: number }).port;
        const tlsToPlain = await storeFailure(
          RedisResponseStore.create({ target: parseRedisUrl(`rediss://127.0.0.1:${port}`) }),
        );
        expect(tlsToPlain.code).toBe("store_unavailable");
        expect(tlsToPlain.message).toContain(`Cannot reach Redis at 127.0.0.1:${port}`);
        const plainToTls = await storeFailure(
          RedisResponseStore.create({
            target: parseRedisUrl(redis.tls!.url.replace("rediss:", "redis:")),
            commandTimeoutMs: 2_000,
          }),
        );
        expect(plainToTls.code).toBe("store_unavailable");
      } finally {
        plain.close();
        await redis.stop();
      }
    });
  },
);
