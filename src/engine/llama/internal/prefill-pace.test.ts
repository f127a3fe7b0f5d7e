import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { PrefillPace } from "./prefill-pace.js";

describe("prefill pace", () => {
  test("chunks grow to the batch size while evaluations are quick, doubling at most", () => {
    const pace = new PrefillPace(128, 512, 250);
    expect(pace.next()).toBe(128);
    pace.record(128, 10);
    expect(pace.next()).toBe(256);
    pace.record(256, 20);
    expect(pace.next()).toBe(512);
    pace.record(512, 40);
    expect(pace.next()).toBe(512);
  });

  test("a slow evaluation shrinks the next chunk to what fits the target, never below the smallest", () => {
    const pace = new PrefillPace(128, 512, 250);
    pace.record(128, 10);
    pace.record(256, 1000); // 256 tokens a second: 64 fit in 250 ms
    expect(pace.next()).toBe(128);
  });

  test("a short tail chunk does not change the size", () => {
    const pace = new PrefillPace(64, 512, 250);
    pace.record(10, 1000);
    expect(pace.next()).toBe(64);
  });

  test("whatever the timings, the size stays within the smallest and the batch", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1024 }),
        fc.integer({ min: 1, max: 4096 }),
        fc.array(fc.tuple(fc.integer({ min: 1, max: 4096 }), fc.double({ min: 0, max: 1e5, noNaN: true }))),
        (smallest, largest, runs) => {
          const pace = new PrefillPace(smallest, largest);
          for (const [tokens, ms] of runs) {
            pace.record(tokens, ms);
            const size = pace.next();
            expect(size).toBeGreaterThanOrEqual(Math.min(smallest, largest));
            expect(size).toBeLessThanOrEqual(Math.max(smallest, largest));
            expect(Number.isInteger(size)).toBe(true);
          }
        },
      ),
    );
  });
});
