import { describe, expect, test } from "vitest";
import { modelLoadLabel, promptLabel } from "./model-status.js";

describe("modelLoadLabel", () => {
  test("says which model loads and how far, which failed and why, and nothing once all are ready", () => {
    expect(modelLoadLabel([{ id: "fast", status: "loading", progress: 0.437 }])).toBe("Loading fast 43%…");
    expect(modelLoadLabel([{ id: "fast", status: "loading" }])).toBe("Loading fast…");
    expect(
      modelLoadLabel([
        { id: "fast", status: "loading" },
        { id: "deep", status: "failed", error: "not a GGUF file" },
      ]),
    ).toBe("deep failed to load: not a GGUF file");
    expect(modelLoadLabel([{ id: "fast", status: "ready" }])).toBeNull();
    expect(modelLoadLabel([])).toBeNull();
  });
});

describe("promptLabel", () => {
  test("says how far the agent prompt's evaluation is while it runs, and nothing once it is done", () => {
    expect(promptLabel({ evaluated: 1200, total: 2700, done: false })).toBe(
      "Preparing the agent prompt 44% (1,200/2,700 tokens)…",
    );
    expect(promptLabel({ evaluated: 0, total: 0, done: false })).toBe("Preparing the agent prompt…");
    expect(promptLabel({ evaluated: 2700, total: 2700, done: true })).toBeNull();
    expect(promptLabel(null)).toBeNull();
  });
});
