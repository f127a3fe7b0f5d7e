import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { SparkError } from "../protocol/errors.js";
import { NO_REDIS_BINARY_REASON, startRedis } from "../server/test-support/redis-server.js";
import { openResponseStore } from "./serving-flags.js";
import { testEngineEnv } from "./test-engine.js";
import { runSpark } from "./test-support/spark-binary.js";

async function refusal(promise: Promise<unknown>): Promise<SparkError> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(SparkError);
  return error as SparkError;
}

describe("--store and --store-password-file", () => {
  test("memory (or nothing) leaves the server its own in-memory store", async () => {
    expect(await openResponseStore({}, {})).toBeUndefined();
    expect(await openResponseStore({ store: "memory" }, {})).toBeUndefined();
  });

  test("contradictions and bad URLs are refused before anything connects", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-store-flags-"));
    const file = path.join(dir, "pass");
    await writeFile(file, "from-the-file\n");
    expect((await refusal(openResponseStore({ store: "memory", storePasswordFile: file }, {}))).code).toBe(
      "invalid_request",
    );
    expect((await refusal(openResponseStore({ store: "http://cache:6379" }, {}))).code).toBe(
      "invalid_request",
    );
    const both = await refusal(
      openResponseStore({ store: "redis://:pw@cache", storePasswordFile: file }, {}),
    );
    expect(both.message).toContain("pass one");
  });

  test.skipIf(NO_REDIS_BINARY_REASON !== null)(
    "the password file logs in to a Redis that requires one",
    async () => {
      const redis = await startRedis({ password: "from-the-file" });
      try {
        const dir = await mkdtemp(path.join(os.tmpdir(), "spark-store-flags-"));
        const file = path.join(dir, "pass");
        await writeFile(file, "from-the-file\n");
        const store = await openResponseStore(
          { store: redis.url, storePasswordFile: file },
          { storeTtlMs: 1000 },
        );
        expect(store?.shared).toBe(true);
        expect(await store?.get("resp_none")).toBeUndefined();
        await store?.dispose();
        const without = await refusal(openResponseStore({ store: redis.url }, {}));
        expect(without.code).toBe("store_unavailable");
      } finally {
        await redis.stop();
      }
    },
  );

  test("spark serve stops at start when its Redis cannot be reached, naming it without the password", async () => {
    const cwd = await mkdtemp(path.join(os.tmpdir(), "spark-store-serve-"));
    const run = await runSpark(
      ["serve", "--store", "redis://spark:topsecret@127.0.0.1:1/0", "--port", "0", "--no-auth"],
      cwd,
      testEngineEnv(),
    );
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("Cannot reach Redis at 127.0.0.1:1");
    expect(run.stderr).toContain("redis://spark:***@127.0.0.1:1/0");
    expect(run.stderr + run.stdout).not.toContain("topsecret");
  });
});
