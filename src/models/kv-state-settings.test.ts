import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { SparkError } from "../protocol/errors.js";
import { kvStateSettings } from "./kv-state-settings.js";

describe("KV state cache settings", () => {
  test("live in the model cache, with the engine's default bound", () => {
    expect(kvStateSettings({ env: { SPARK_HOME: "/h" } })).toEqual({
      dir: join("/h", "models", "kv-states"),
    });
    expect(kvStateSettings({ cacheDir: "/c", env: {} })).toEqual({ dir: join("/c", "kv-states") });
  });

  test("take a bound in bytes or with a binary suffix; 0 turns the cache off", () => {
    const env = (value: string) => ({ cacheDir: "/c", env: { SPARK_KV_CACHE_BYTES: value } });
    expect(kvStateSettings(env("1000"))?.maxBytes).toBe(1000);
    expect(kvStateSettings(env("512M"))?.maxBytes).toBe(512 * 1024 ** 2);
    expect(kvStateSettings(env("4g"))?.maxBytes).toBe(4 * 1024 ** 3);
    expect(kvStateSettings(env("0"))).toBeUndefined();
  });

  test.each(["-1", "1.5G", "2 GiB", "lots", "1T", "9999999999999999"])("refuse %j", (value) => {
    let error: unknown;
    try {
      kvStateSettings({ cacheDir: "/c", env: { SPARK_KV_CACHE_BYTES: value } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(SparkError);
    expect(error).toMatchObject({ code: "invalid_request", param: "SPARK_KV_CACHE_BYTES" });
  });
});
