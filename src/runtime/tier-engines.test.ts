import { describe, expect, test } from "vitest";
import { chooseTiers } from "./tier-engines.js";

describe("chooseTiers with --draft-model", () => {
  const config = {
    defaultTier: "fast",
    tiers: {
      fast: { engine: "llama" as const, model: "hf:a/b/small.gguf", context: 8192, draft_model: "./d.gguf" },
      deep: { engine: "llama" as const, model: "./big.gguf" },
    },
  };

  test("gives the tier a session starts on the draft model", () => {
    expect(chooseTiers(config, { draftModel: "./draft.gguf" }).tiers.fast).toEqual({
      ...config.tiers.fast,
      draft_model: "./draft.gguf",
    });
    const deep = chooseTiers(config, { model: "deep", draftModel: "./draft.gguf" });
    expect(deep.defaultTier).toBe("deep");
    expect(deep.tiers.deep).toEqual({ engine: "llama", model: "./big.gguf", draft_model: "./draft.gguf" });
    expect(deep.tiers.fast).toEqual(config.tiers.fast);
  });

  test("another model file drops the configured draft model, which was chosen for the other model", () => {
    expect(chooseTiers(config, { model: "./other.gguf" }).tiers.fast).toEqual({
      engine: "llama",
      model: "./other.gguf",
      context: 8192,
    });
    expect(chooseTiers(config, {})).toEqual({ defaultTier: "fast", tiers: config.tiers });
  });
});
