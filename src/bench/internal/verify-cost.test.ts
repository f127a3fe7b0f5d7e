import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { beforeAll, describe, expect, test } from "vitest";
import { trainedTestModelPath } from "../../engine/test-support/test-model.js";
import { verifyCost } from "./verify-cost.js";

/** The spec bench's ceiling comes from these passes: timed the way the engine decodes. */
describe("what a pass over k tokens costs", () => {
  const trained = trainedTestModelPath();
  let localBuild = false;

  beforeAll(async () => {
    // Spark's local build of the addon has the native loop; node-llama-cpp's prebuilt one has not.
    const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
    localBuild = llama.buildType === "localBuild";
    await llama.dispose();
  });

  test.skipIf(trained === undefined)(
    "a trained model's passes are timed in the native loop where the engine has one",
    async () => {
      const { passMs, timedIn } = await verifyCost(trained!, [1, 9, 17], 1, {
        threads: 1,
        contextTokens: 100,
      });
      expect([...passMs.keys()]).toEqual([1, 9, 17]);
      for (const ms of passMs.values()) expect(ms).toBeGreaterThan(0);
      expect(timedIn).toMatch(localBuild ? /^the native loop/ : /^controlledEvaluate/);
    },
  );
});
