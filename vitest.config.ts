import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "vscode/src/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each llama.cpp context uses every physical core; running model tests in parallel on a
    // 2-core machine only makes each slower.
    fileParallelism: false,
  },
});
