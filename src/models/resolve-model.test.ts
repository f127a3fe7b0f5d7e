import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SparkError } from "../protocol/errors.js";
import { DEFAULT_MODEL } from "./model-uri.js";
import { offlineFromEnv, resolveModel } from "./resolve-model.js";
import { type FakeHub, fakeGguf, startFakeHub } from "./test-support/fake-hub.js";

const URI = "hf:test-org/tiny-GGUF/tiny.gguf";
let hub: FakeHub;
let dir: string;

beforeAll(async () => {
  hub = await startFakeHub([
    { owner: "test-org", repo: "tiny-GGUF", file: "tiny.gguf", content: fakeGguf(8192) },
  ]);
  dir = await mkdtemp(join(tmpdir(), "spark-resolve-"));
});
afterAll(async () => {
  await hub.close();
  await rm(dir, { recursive: true, force: true });
});

describe("resolveModel", () => {
  it("returns a local GGUF path as is", async () => {
    const path = join(dir, "local.gguf");
    await writeFile(path, fakeGguf(64));
    expect(await resolveModel("./local.gguf", { cwd: dir, download: false })).toEqual({
      path,
      uri: path,
      source: "local",
    });
  });

  it("downloads an hf: model once, then serves it from the cache", async () => {
    const cacheDir = join(dir, "cache-a");
    const common = { cacheDir, endpoint: hub.endpoint, env: {} };
    const first = await resolveModel(URI, common);
    expect(first).toMatchObject({ uri: URI, source: "download" });
    hub.requests.length = 0;
    const second = await resolveModel(URI, common);
    expect(second).toEqual({ ...first, source: "cache" });
    expect(hub.requests).toHaveLength(0);
  });

  it("fails clearly, without touching the network, when downloads are off", async () => {
    hub.requests.length = 0;
    for (const options of [{ download: false, env: {} }, { env: { SPARK_OFFLINE: "1" } }]) {
      const error = await resolveModel(undefined, {
        cacheDir: join(dir, "empty"),
        endpoint: hub.endpoint,
        ...options,
      })
        .then(() => undefined)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SparkError);
      expect((error as SparkError).code).toBe("model_unavailable");
      expect((error as SparkError).message).toContain(DEFAULT_MODEL);
      expect((error as SparkError).message).toContain("--model");
    }
    expect(hub.requests).toHaveLength(0);
  });

  it("reads offline mode from the environment", () => {
    expect(offlineFromEnv({ HF_HUB_OFFLINE: "1" })).toBe(true);
    expect(offlineFromEnv({ SPARK_OFFLINE: "true" })).toBe(true);
    expect(offlineFromEnv({ SPARK_OFFLINE: "0" })).toBe(false);
    expect(offlineFromEnv({})).toBe(false);
  });
});
