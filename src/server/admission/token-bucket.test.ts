import { expect, test } from "vitest";
import { TokenBucket } from "./token-bucket.js";

test("refills continuously at its capacity per minute, never above it", () => {
  let now = 0;
  const bucket = new TokenBucket(60, () => now);
  expect(bucket.take(60)).toBe(true);
  expect(bucket.take(1)).toBe(false);
  expect(bucket.secondsUntil(1)).toBeCloseTo(1);
  now += 1000;
  expect(bucket.take(1)).toBe(true);
  now += 10 * 60_000;
  expect(bucket.available).toBe(60);
  expect(bucket.full).toBe(true);
});

test("a charge past empty is a debt that refill repays first", () => {
  let now = 0;
  const bucket = new TokenBucket(600, () => now);
  bucket.charge(900);
  expect(bucket.available).toBe(-300);
  expect(bucket.secondsUntil(1)).toBeCloseTo(30.1);
  now += 30_000;
  expect(bucket.available).toBeCloseTo(0);
  expect(bucket.take(1)).toBe(false);
});
