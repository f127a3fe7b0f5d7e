import { describe, expect, test } from "vitest";
import { ceilingCase, ninetyPercentTarget, specCeiling } from "./spec.js";

const passes = (step: number, nine: number, seventeen: number) =>
  new Map([
    [1, step],
    [9, nine],
    [17, seventeen],
  ]);

describe("the spec rows' ceiling and target", () => {
  test("compute-bound (a 2-core CPU, SmolLM2): the 90% target is 0.8 of the ceiling, and says so", () => {
    // This morning's rows: a 9-token pass 5.12 steps, a 17-token pass 9.31.
    const ceiling = specCeiling(passes(10, 51.2, 93.1));
    expect(ceiling.memoryBound).toBe(false);
    expect(ceiling.ceiling).toBeCloseTo(17 / 9.31);
    expect(ceilingCase(ceiling)).toBe("compute-bound: a 17-token pass costs 9.3 steps, ceiling 1.8x");
    const { target, holds } = ninetyPercentTarget(ceiling);
    expect(target).toBe(
      ">= 1.46x (0.8 of the ceiling; compute-bound: a 17-token pass costs 9.3 steps, ceiling 1.8x)",
    );
    expect(holds(1.47)).toBe(true);
    expect(holds(1.3)).toBe(false);
  });

  test("the ceiling is the better of 9 and 17 tokens (stories260K: a 17-token pass costs more per token)", () => {
    const ceiling = specCeiling(passes(1, 5.53, 11.6));
    expect(ceiling.ceiling).toBeCloseTo(9 / 5.53);
  });

  test("a 17-token pass timed cheaper than a 9-token one (a step slowed by other work) is not read as memory-bound", () => {
    // A loaded machine's SmolLM2 rows: a 9-token pass 3.6 steps, a 17-token pass 1.8.
    const ceiling = specCeiling(passes(831, 2990, 1525));
    expect(ceiling.memoryBound).toBe(false);
    expect(ceiling.ceiling).toBeCloseTo(17 / (2990 / 831));
  });

  test("memory-bound (a pass over 17 tokens at most 2 steps): the 3x target stays", () => {
    const ceiling = specCeiling(passes(10, 11, 14));
    expect(ceiling.memoryBound).toBe(true);
    const { target, holds } = ninetyPercentTarget(ceiling);
    expect(target).toMatch(/^>= 3x \(memory-bound: a 17-token pass costs 1\.4 steps, ceiling 12\.\dx\)$/);
    expect(holds(2.9)).toBe(false);
    expect(holds(3.1)).toBe(true);
  });
});
