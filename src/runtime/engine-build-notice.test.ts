import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { engineBuildNotice } from "./engine-build-notice.js";

describe("engineBuildNotice", () => {
  test("on the CPU with the prebuilt binary: what Spark runs on and how to get the fast engine, said once", async () => {
    const cache = path.join(await mkdtemp(path.join(os.tmpdir(), "spark-engine-notice-")), "engine");
    const options = { env: { SPARK_ENGINE_CACHE: cache }, packageRoot: "/opt/spark" };
    const prebuilt = { build: "prebuilt" as const, nativeLoop: false };
    expect(engineBuildNotice(prebuilt, "cpu", options)).toBe(
      "the model runs on node-llama-cpp's prebuilt binary: it works, without the native decode loop that " +
        "makes Spark's own build faster. For the fast engine, install cmake and a C++ compiler, then run: " +
        'node "/opt/spark/scripts/build-engine.mjs"',
    );
    expect(existsSync(path.join(cache, "prebuilt-notice-said"))).toBe(true);
    expect(engineBuildNotice(prebuilt, "cpu", options)).toBeNull();
  });

  test("nothing to say for the local build, or for a GPU's prebuilt binary", async () => {
    const cache = await mkdtemp(path.join(os.tmpdir(), "spark-engine-notice-"));
    const options = { env: { SPARK_ENGINE_CACHE: cache } };
    expect(engineBuildNotice({ build: "local", nativeLoop: true }, "cpu", options)).toBeNull();
    expect(engineBuildNotice({ build: "prebuilt", nativeLoop: false }, "cuda", options)).toBeNull();
    expect(existsSync(path.join(cache, "prebuilt-notice-said"))).toBe(false);
  });
});
