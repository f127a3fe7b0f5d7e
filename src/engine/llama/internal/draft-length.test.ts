import fc from "fast-check";
import { describe, expect, test } from "vitest";
import {
  ACCEPTANCE,
  bestDraftLength,
  expectedSpeedup,
  nativeDraftLength,
  nativeDraftSettings,
  nativeDraftThreshold,
} from "./draft-length.js";
import { PassCostMeter } from "./pass-cost-meter.js";
import { predictionDraftSettings } from "./speculation.js";

const acceptance = fc.double({ min: 0, max: 0.999, noNaN: true });
const cost = fc.double({ min: 0.005, max: 1.5, noNaN: true });
const maxLength = fc.integer({ min: 1, max: 32 });

describe("the draft length that yields most", () => {
  test("never drafts where a token costs as much as it can return at the acceptance", () => {
    fc.assert(
      fc.property(acceptance, cost, maxLength, (p, c, max) => {
        const length = bestDraftLength(p, c, max);
        if (c >= p) expect(length).toBe(0);
        if (length > 0) expect(expectedSpeedup(length, p, c)).toBeGreaterThan(1);
      }),
    );
  });

  test("bounded by the longest draft, and no other length yields more", () => {
    fc.assert(
      fc.property(acceptance, cost, maxLength, (p, c, max) => {
        const length = bestDraftLength(p, c, max);
        expect(length).toBeGreaterThanOrEqual(0);
        expect(length).toBeLessThanOrEqual(max);
        const best = expectedSpeedup(length, p, c);
        for (let other = 0; other <= max; other++) {
          expect(expectedSpeedup(other, p, c)).toBeLessThanOrEqual(best * (1 + 1e-9));
        }
      }),
    );
  });

  test("cheaper passes and likelier tokens draft at least as far", () => {
    fc.assert(
      fc.property(acceptance, acceptance, cost, cost, maxLength, (p1, p2, c1, c2, max) => {
        const [lowP, highP] = p1 <= p2 ? [p1, p2] : [p2, p1];
        const [cheap, dear] = c1 <= c2 ? [c1, c2] : [c2, c1];
        expect(bestDraftLength(lowP, cheap, max)).toBeGreaterThanOrEqual(bestDraftLength(lowP, dear, max));
        expect(bestDraftLength(highP, cheap, max)).toBeGreaterThanOrEqual(bestDraftLength(lowP, cheap, max));
      }),
    );
  });

  test("a full match drafts the longest where a token costs less than a step; none where it costs one", () => {
    fc.assert(
      fc.property(fc.double({ min: 0.005, max: 0.99, noNaN: true }), maxLength, (c, max) => {
        expect(bestDraftLength(1, c, max)).toBe(max);
        expect(bestDraftLength(1, 1 + c, max)).toBe(0);
      }),
    );
  });
});

describe("the native loop's threshold", () => {
  test("never below the token's cost, so the loop never drafts a token that costs more than it returns", () => {
    fc.assert(
      fc.property(acceptance, fc.double({ min: 0.005, max: 0.99, noNaN: true }), maxLength, (p, c, max) => {
        const { maxDraft, tokenCost: threshold } = nativeDraftSettings(c, max);
        expect(threshold).toBeGreaterThanOrEqual(Math.min(0.99, Math.max(0.01, c)) - 1e-9);
        expect(maxDraft).toBeLessThanOrEqual(max);
        const length = nativeDraftLength(p, threshold, maxDraft);
        if (length > 0) expect(expectedSpeedup(length, p, c)).toBeGreaterThan(1);
      }),
      { numRuns: 60 },
    );
  });

  // Over the acceptance rates the threshold is chosen for (a flat sum over other rates is not what
  // it optimises: c = 0.8175 fell 1% short there).
  test("its lengths lose no more against the best lengths than drafting while p^i exceeds the token's cost does (the loop's rule before)", () => {
    const loss = (threshold: number, c: number) =>
      ACCEPTANCE.reduce((sum, p) => {
        const ideal = expectedSpeedup(bestDraftLength(p, c, 16), p, c);
        return sum + (ideal - expectedSpeedup(nativeDraftLength(p, threshold, 16), p, c)) / ideal;
      }, 0);
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 0.9, noNaN: true }), (c) => {
        expect(loss(nativeDraftThreshold(c, 16), c)).toBeLessThanOrEqual(loss(c, c) + 1e-9);
      }),
      { numRuns: 40, examples: [[0.8175]] },
    );
  });

  test("cheap passes (a GPU, a memory-bound model) draft long; a CPU's dear ones short", () => {
    const gpu = nativeDraftSettings(0.02, 16);
    const cpu = nativeDraftSettings(0.55, 16);
    expect(nativeDraftLength(0.9, gpu.tokenCost, gpu.maxDraft)).toBe(16);
    expect(nativeDraftLength(0.9, cpu.tokenCost, cpu.maxDraft)).toBeLessThanOrEqual(4);
    expect(nativeDraftLength(0.9, cpu.tokenCost, cpu.maxDraft)).toBeGreaterThan(0);
  });
});

describe("a prediction's drafts from the measured pass cost", () => {
  test("before anything is measured, the native loop measures (no cost given)", () => {
    expect(predictionDraftSettings(new PassCostMeter(), undefined, 16)).toEqual({ maxDraft: 16 });
  });

  test("a cost given in the options sizes the drafts; a whole step's cost drafts none", () => {
    expect(predictionDraftSettings(new PassCostMeter(), 1, 16).maxDraft).toBe(0);
    expect(predictionDraftSettings(new PassCostMeter(), 0.05, 16)).toEqual(nativeDraftSettings(0.05, 16));
  });

  test("a plain run then a drafting run give the cost per draft token; too short runs are ignored", () => {
    const meter = new PassCostMeter();
    meter.record({ passes: 100, drafted: 200, ms: 300 });
    expect(meter.tokenCost).toBeUndefined();
    meter.record({ passes: 100, drafted: 0, ms: 1000 });
    meter.record({ passes: 4, drafted: 0, ms: 1000 });
    // 20 passes over 200 draft tokens took 100 steps' time: each draft token cost 0.4 of a step.
    meter.record({ passes: 20, drafted: 200, ms: 1000 });
    expect(meter.tokenCost).toBeCloseTo(0.4);
    meter.record({ passes: 20, drafted: 4, ms: 1000 });
    expect(meter.tokenCost).toBeCloseTo(0.4);
  });

  test("where the measured cost says no draft pays, one run in eight still drafts (on the loop's measure)", () => {
    const meter = new PassCostMeter();
    meter.record({ passes: 100, drafted: 0, ms: 100 });
    meter.record({ passes: 20, drafted: 100, ms: 500 });
    expect(meter.tokenCost).toBeGreaterThanOrEqual(1);
    const runs = Array.from({ length: 16 }, () => predictionDraftSettings(meter, undefined, 16));
    expect(runs.filter((run) => run.maxDraft > 0)).toEqual([{ maxDraft: 16 }, { maxDraft: 16 }]);
  });
});
