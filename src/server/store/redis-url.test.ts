import { describe, expect, test } from "vitest";
import { SparkError } from "../../protocol/errors.js";
import { describeAddress, parseRedisUrl } from "./redis-url.js";

describe("--store URLs", () => {
  test("redis:// with defaults, credentials, a port and a database", () => {
    expect(parseRedisUrl("redis://cache")).toMatchObject({
      address: { host: "cache", port: 6379, tls: false },
      db: 0,
    });
    const full = parseRedisUrl("redis://spark:s%40cret@10.0.0.5:6380/3");
    expect(full).toMatchObject({
      address: { host: "10.0.0.5", port: 6380, tls: false },
      username: "spark",
      password: "s@cret",
      db: 3,
    });
    expect(full.shown).not.toContain("cret");
    expect(parseRedisUrl("redis://:pw@[::1]:7000").address).toEqual({ host: "::1", port: 7000, tls: false });
  });

  test("rediss:// is TLS, with the same defaults, credentials and database as redis://", () => {
    expect(parseRedisUrl("rediss://cache.example.com")).toMatchObject({
      address: { host: "cache.example.com", port: 6379, tls: true },
      db: 0,
    });
    const full = parseRedisUrl("rediss://default:s%3Acret@managed.example.com:25061/2");
    expect(full).toMatchObject({
      address: { host: "managed.example.com", port: 25061, tls: true },
      username: "default",
      password: "s:cret",
      db: 2,
    });
    expect(full.shown).toBe("rediss://default:***@managed.example.com:25061/2");
    expect(describeAddress(full.address)).toBe("managed.example.com:25061");
    expect(describeAddress(parseRedisUrl("rediss://[::1]:7000").address)).toBe("[::1]:7000");
  });

  test("unix:// sockets with an optional ?db=", () => {
    expect(parseRedisUrl("unix:///run/redis/redis.sock?db=2")).toMatchObject({
      address: { path: "/run/redis/redis.sock" },
      db: 2,
    });
  });

  test.each([
    ["http://cache:6379", "must start with redis://, rediss:// or unix://"],
    ["redis+tls://cache", "must start with redis://, rediss:// or unix://"],
    ["unixs:///tmp/r.sock", "must start with redis://, rediss:// or unix://"],
    ["rediss://cache?insecure=true", "query"],
    ["rediss://cache?ca=/etc/ca.pem", "query"],
    ["rediss://cache#x", "fragment"],
    ["rediss:///0", "names no host"],
    ["rediss://cache/65536", "database number"],
    ["unix://host/tmp/r.sock", "unix URL with a host"],
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

  test.each([
    "redis://u:hunter2@cache/nope",
    "rediss://u:hunter2@cache/nope",
    "rediss://u:hunter2@cache?insecure",
  ])("a refused URL's message never repeats its password: %s", (url) => {
    expect(() => parseRedisUrl(url)).toThrow(/\*\*\*/);
    try {
      parseRedisUrl(url);
    } catch (error) {
      expect((error as Error).message).not.toContain("hunter2");
    }
  });

  test("a string that is not a URL is not repeated (it may be a password pasted by mistake)", () => {
    expect(() => parseRedisUrl("hunter2 secret")).toThrow(SparkError);
    try {
      parseRedisUrl("hunter2 secret");
    } catch (error) {
      expect((error as Error).message).not.toContain("hunter2");
    }
  });
});
