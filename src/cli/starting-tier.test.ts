import { expect, test } from "vitest";
import { chooseTiers } from "../runtime/tier-engines.js";
import { startingTier } from "./starting-tier.js";

const config = {
  defaultTier: "fast",
  tiers: { fast: { engine: "llama" as const }, deep: { engine: "llama" as const } },
};

test("the status line names the model by its tier while it warms, not the GGUF --model gave (SmolLM2-135M-Instruct.Q4_1, then fast)", () => {
  for (const model of [
    undefined,
    "deep",
    "fast",
    "./SmolLM2-135M-Instruct.Q4_1.gguf",
    "hf:org/repo:Q4_K_M",
  ]) {
    const flags = model === undefined ? {} : { model };
    // The same tier the runtime then starts on, so the name does not change once it is ready.
    expect(startingTier(flags, config)).toBe(chooseTiers(config, flags).defaultTier);
  }
  expect(startingTier({ model: "./SmolLM2-135M-Instruct.Q4_1.gguf" }, config)).toBe("fast");
  expect(startingTier({ model: "deep" }, config)).toBe("deep");
});
