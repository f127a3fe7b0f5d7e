import { describe, expect, test } from "vitest";
import { modelLoadLabel } from "./model-status.js";

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
