import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { SparkError } from "../protocol/errors.js";
import {
  NO_REDIS_BINARY_REASON,
  NO_TLS_REDIS_REASON,
  startRedis,
} from "../server/test-support/redis-server.js";
import { openResponseStore } from "./serving-flags.js";
import { runSpark, startWorkspaceServe } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

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

  test.skipIf(NO_TLS_REDIS_REASON !== null)(
    "spark serve reaches a rediss:// Redis whose private CA NODE_EXTRA_CA_CERTS names, and refuses it without",
    async () => {
      const redis = await startRedis({ tls: true, password: "tls-pass" });
      try {
        const dir = await mkdtemp(path.join(os.tmpdir(), "spark-store-tls-"));
        const ca = path.join(dir, "ca.pem");
        const pass = path.join(dir, "pass");
        await writeFile(ca, redis.tls!.ca);
        await writeFile(pass, "tls-pass\n");
        const args = ["--store", redis.tls!.url, "--store-password-file", pass, "--log", "off"];
        const serve = await startWorkspaceServe(args, { ...testEngineEnv(), NODE_EXTRA_CA_CERTS: ca });
        await serve.stop();
        const cwd = await mkdtemp(path.join(os.tmpdir(), "spark-store-serve-"));
        const refused = await runSpark(["serve", ...args, "--port", "0", "--no-auth"], cwd, testEngineEnv());
        expect(refused.code).not.toBe(0);
        expect(refused.stderr).toContain("its TLS certificate was refused");
        expect(refused.stderr + refused.stdout).not.toContain("tls-pass");
      } finally {
        await redis.stop();
      }
    },
  );
});
