import os from "node:os";
import path from "node:path";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "vscode/src/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each llama.cpp context uses every physical core; running model tests in parallel on a
    // 2-core machine only makes each slower.
    fileParallelism: false,
    // Servers the tests start record their keys (and trusted projects) here, never in the
    // person's own state folder.
    // Nor do embedded engines save KV states into the person's model cache (tests that cover it
    // name their own folder).
    env: {
      XDG_STATE_HOME: path.join(os.tmpdir(), `spark-test-state-${process.pid}`),
      SPARK_KV_CACHE_BYTES: "0",
    },
  },
});
