import { describe, expect, test } from "vitest";
import { SparkError } from "../../protocol/errors.js";
import { parseRedisUrl } from "./redis-url.js";

describe("--store URLs", () => {
  test("redis:// with defaults, credentials, a port and a database", () => {
    expect(parseRedisUrl("redis://cache")).toMatchObject({ address: { host: "cache", port: 6379 }, db: 0 });
    const full = parseRedisUrl("redis://spark:s%40cret@10.0.0.5:6380/3");
    expect(full).toMatchObject({
      address: { host: "10.0.0.5", port: 6380 },
      username: "spark",
      password: "s@cret",
      db: 3,
    });
    expect(full.shown).not.toContain("cret");
    expect(parseRedisUrl("redis://:pw@[::1]:7000").address).toEqual({ host: "::1", port: 7000 });
  });

  test("unix:// sockets with an optional ?db=", () => {
    expect(parseRedisUrl("unix:///run/redis/redis.sock?db=2")).toMatchObject({
      address: { path: "/run/redis/redis.sock" },
      db: 2,
    });
  });

  test.each([
    ["http://cache:6379", "must start with redis:// or unix://"],
    ["rediss://cache", "must start with redis:// or unix://"],
    ["redis://cache/99999", "database number"],
    ["redis://cache/x", "database number"],
    ["redis://cache?timeout=1", "query"],
    ["unix:///tmp/r.sock?password=x", "only ?db=N"],
    ["not a url", "is not a URL"],
  ])("%s is refused: %s", (url, why) => {
    let error: unknown;
    try {
      parseRedisUrl(url);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SparkError);
    expect((error as SparkError).code).toBe("invalid_request");
    expect((error as SparkError).message).toContain(why);
  });

  test("a refused URL's message never repeats its password", () => {
    expect(() => parseRedisUrl("redis://u:hunter2@cache/nope")).toThrow(/\*\*\*/);
    try {
      parseRedisUrl("redis://u:hunter2@cache/nope");
    } catch (error) {
      expect((error as Error).message).not.toContain("hunter2");
    }
  });
});
