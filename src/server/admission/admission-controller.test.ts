import { describe, expect, test } from "vitest";
import { SparkError } from "../../protocol/errors.js";
import { AdmissionController, type Permit } from "./admission-controller.js";

/** Settles `promise` into a value for assertions: the permit or the SparkError. */
function settle(promise: Promise<Permit>): Promise<Permit | SparkError> {
  return promise.catch((error: SparkError) => error);
}

describe("admission controller", () => {
  test("admits up to maxConcurrent at once and queues the rest in order", async () => {
    const admission = new AdmissionController({ maxConcurrent: 2 });
    const first = admission.request({ key: "k" });
    const second = admission.request({ key: "k" });
    const third = admission.request({ key: "k" });
    expect([first.position, second.position, third.position]).toEqual([0, 0, 1]);
    expect(admission.running).toBe(2);
    expect(admission.waiting).toBe(1);
    (await first.granted).release();
    const permit = await third.granted;
    expect(permit.waitedMs).toBeGreaterThanOrEqual(0);
    expect(admission.running).toBe(2);
    expect(admission.waiting).toBe(0);
  });

  test("tells each waiting request its place whenever it changes", async () => {
    const admission = new AdmissionController({ maxConcurrent: 1 });
    const running = await admission.admit({ key: "k" });
    const seen: number[][] = [[], [], []];
    const waiting = [0, 1, 2].map((i) => admission.admit({ key: "k", onPosition: (p) => seen[i]!.push(p) }));
    expect(seen).toEqual([[1], [2], [3]]);
    running.release();
    const next = await waiting[0]!;
    expect(seen).toEqual([[1], [2, 1], [3, 2]]);
    next.release();
    (await waiting[1]!).release();
    (await waiting[2]!).release();
    expect(seen).toEqual([[1], [2, 1], [3, 2, 1]]);
  });

  test("a full queue refuses at once with queue_full (429) and a Retry-After", () => {
    const admission = new AdmissionController({ maxConcurrent: 1, maxQueue: 1 });
    admission.request({ key: "k" });
    admission.request({ key: "k" });
    let error: unknown;
    try {
      admission.request({ key: "k" });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "queue_full", status: 429 });
    expect((error as SparkError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(admission.waiting).toBe(1);
  });

  test("a request that waits past its deadline fails with queue_timeout (503), never silently", async () => {
    const rejected: string[] = [];
    const admission = new AdmissionController(
      { maxConcurrent: 1, queueTimeoutMs: 30 },
      { rejected: (error) => rejected.push(error.code) },
    );
    const running = await admission.admit({ key: "k" });
    const waiting = settle(admission.admit({ key: "k" }));
    const error = (await waiting) as SparkError;
    expect(error).toBeInstanceOf(SparkError);
    expect(error).toMatchObject({ code: "queue_timeout", status: 503 });
    expect(error.message).toMatch(/waited 30 ms in the queue/);
    expect(error.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(rejected).toEqual(["queue_timeout"]);
    expect(admission.waiting).toBe(0);
    running.release();
    expect(admission.running).toBe(0);
  });

  test("aborting while queued leaves the queue with cancelled; the places behind move up", async () => {
    const admission = new AdmissionController({ maxConcurrent: 1 });
    const running = await admission.admit({ key: "k" });
    const controller = new AbortController();
    const leaving = settle(admission.admit({ key: "k", signal: controller.signal }));
    const places: number[] = [];
    const staying = admission.admit({ key: "k", onPosition: (p) => places.push(p) });
    controller.abort();
    expect(await leaving).toMatchObject({ code: "cancelled" });
    expect(places).toEqual([2, 1]);
    running.release();
    (await staying).release();
    expect(admission.running).toBe(0);
  });

  test("waiting keys are served round-robin: one key's burst does not starve another", async () => {
    const admission = new AdmissionController({ maxConcurrent: 1 });
    const blocker = await admission.admit({ key: "x" });
    const order: string[] = [];
    const requests = [
      ...["a1", "a2", "a3", "a4"].map((name) => ({ name, key: "a" })),
      { name: "b1", key: "b" },
      { name: "b2", key: "b" },
    ].map(({ name, key }) =>
      admission.admit({ key }).then((permit) => {
        order.push(name);
        permit.release();
      }),
    );
    blocker.release();
    await Promise.all(requests);
    expect(order).toEqual(["a1", "b1", "a2", "b2", "a3", "a4"]);
  });

  test("requests per minute are limited per key, with Retry-After; other keys are untouched", () => {
    let now = 0;
    const admission = new AdmissionController({ requestsPerMinute: 2 }, { now: () => now });
    admission.request({ key: "a" }).granted.then((p) => p.release());
    admission.request({ key: "a" }).granted.then((p) => p.release());
    let error: unknown;
    try {
      admission.request({ key: "a" });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: "rate_limited", status: 429 });
    expect((error as SparkError).retryAfterSeconds).toBeCloseTo(30);
    expect(admission.request({ key: "b" }).position).toBe(0);
    now += 30_000;
    expect(admission.request({ key: "a" }).position).toBe(0);
  });

  test("tokens per minute are charged after a response; a key in debt waits for refill", async () => {
    let now = 0;
    const admission = new AdmissionController({ tokensPerMinute: 600 }, { now: () => now });
    const permit = await admission.admit({ key: "a" });
    permit.charge(1200);
    permit.release();
    expect(() => admission.request({ key: "a" })).toThrow(/600 tokens per minute/);
    expect(admission.request({ key: "b" }).position).toBe(0);
    now += 61_000;
    expect(admission.request({ key: "a" }).position).toBe(0);
  });

  test("close fails every waiting request and refuses new ones", async () => {
    const admission = new AdmissionController({ maxConcurrent: 1 });
    await admission.admit({ key: "k" });
    const waiting = settle(admission.admit({ key: "k" }));
    admission.close();
    expect(await waiting).toMatchObject({ code: "model_unavailable" });
    expect(() => admission.request({ key: "k" })).toThrow(/shutting down/);
  });

  test("a burst with cancels and timeouts answers every request exactly once and never over-admits", async () => {
    const admission = new AdmissionController({ maxConcurrent: 3, maxQueue: 40, queueTimeoutMs: 200 });
    let running = 0;
    let peak = 0;
    const outcomes = new Map<number, string>();
    const all: Promise<void>[] = [];
    for (let i = 0; i < 64; i++) {
      const controller = new AbortController();
      let ticket: ReturnType<AdmissionController["request"]>;
      try {
        ticket = admission.request({ key: `key${i % 5}`, signal: controller.signal });
      } catch (error) {
        outcomes.set(i, (error as SparkError).code);
        continue;
      }
      if (i % 7 === 0) queueMicrotask(() => controller.abort());
      all.push(
        ticket.granted.then(
          async (permit) => {
            expect(outcomes.has(i)).toBe(false);
            outcomes.set(i, "admitted");
            running++;
            peak = Math.max(peak, running);
            await new Promise((resolve) => setImmediate(resolve));
            running--;
            permit.release();
            permit.release(); // idempotent
          },
          (error: SparkError) => {
            expect(outcomes.has(i)).toBe(false);
            outcomes.set(i, error.code);
          },
        ),
      );
    }
    await Promise.all(all);
    expect(outcomes.size).toBe(64);
    expect(peak).toBeLessThanOrEqual(3);
    const counts = [...outcomes.values()].reduce<Record<string, number>>((acc, code) => {
      acc[code] = (acc[code] ?? 0) + 1;
      return acc;
    }, {});
    expect(counts.queue_full).toBe(64 - 3 - 40);
    expect(counts.admitted).toBeGreaterThan(0);
    expect(admission.running).toBe(0);
    expect(admission.waiting).toBe(0);
  });
});
