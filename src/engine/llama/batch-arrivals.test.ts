import fc from "fast-check";
import { afterEach, describe, expect, test, vi } from "vitest";
import { BatchArrivals } from "./internal/batch-arrivals.js";

const MAX_WAIT_MS = 50;

describe("a batch waits for the requests on their way to it", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test("a dispatch waits while a request is on its way, and goes once it has arrived", () => {
    vi.useFakeTimers();
    const arrivals = new BatchArrivals();
    const dispatch = vi.fn();
    const arrived = arrivals.arrive();
    arrivals.schedule(dispatch);
    vi.advanceTimersByTime(10);
    expect(dispatch).not.toHaveBeenCalled();
    arrived();
    arrived();
    vi.advanceTimersByTime(0);
    expect(dispatch).toHaveBeenCalledTimes(1);
  });

  test("a request that never arrives holds a batch back at most 50 ms", () => {
    vi.useFakeTimers();
    const arrivals = new BatchArrivals();
    const dispatch = vi.fn();
    arrivals.arrive();
    arrivals.schedule(dispatch);
    vi.advanceTimersByTime(MAX_WAIT_MS - 1);
    expect(dispatch).not.toHaveBeenCalled();
    // The timer's dispatch goes at the next cycle (a millisecond later, in fake time).
    vi.advanceTimersByTime(2);
    expect(dispatch).toHaveBeenCalledTimes(1);
  });

  // Any order of requests setting out, arriving, batches asking to go and time passing: a batch
  // never goes while a request is on its way unless some batch has waited 50 ms, and none waits
  // longer than that, or at all once nobody is on the way.
  test("model: no batch goes early, none waits past its bound", () => {
    const step = fc.oneof(
      fc.constant({ kind: "arrive" as const }),
      fc.record({ kind: fc.constant("arrived" as const), which: fc.nat() }),
      fc.constant({ kind: "schedule" as const }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 30 }) }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        vi.useFakeTimers();
        try {
          const arrivals = new BatchArrivals();
          const onTheWay: (() => void)[] = [];
          const batches: { at: number; ranAt?: number; arrivingWhenRan?: number }[] = [];
          const now = () => Date.now();
          // A cycle of the event loop: a dispatch set off by a timer goes a millisecond later.
          const settle = () => vi.advanceTimersByTime(1);
          for (const s of steps) {
            if (s.kind === "arrive") onTheWay.push(arrivals.arrive());
            else if (s.kind === "arrived" && onTheWay.length > 0)
              onTheWay.splice(s.which % onTheWay.length, 1)[0]!();
            else if (s.kind === "schedule") {
              const batch: (typeof batches)[number] = { at: now() };
              batches.push(batch);
              arrivals.schedule(() => {
                batch.ranAt = now();
                batch.arrivingWhenRan = onTheWay.length;
              });
            } else if (s.kind === "tick") vi.advanceTimersByTime(s.ms);
            settle();
            const waiting = batches.filter((batch) => batch.ranAt === undefined);
            // None waits once nobody is on the way, nor past its bound.
            if (onTheWay.length === 0) expect(waiting).toEqual([]);
            for (const batch of waiting) expect(now() - batch.at).toBeLessThanOrEqual(MAX_WAIT_MS + 1);
          }
          for (const batch of batches) {
            if (batch.ranAt === undefined || batch.arrivingWhenRan === 0) continue;
            // Went while someone was on the way: the oldest batch waiting with it had waited 50 ms.
            const oldest = Math.min(...batches.filter((b) => b.ranAt === batch.ranAt).map((b) => b.at));
            expect(batch.ranAt - oldest).toBeGreaterThanOrEqual(MAX_WAIT_MS);
          }
        } finally {
          vi.useRealTimers();
        }
      }),
      { numRuns: 300 },
    );
  });
});
