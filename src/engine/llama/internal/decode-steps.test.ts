import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { DecodeSteps, type StepMember } from "./decode-steps.js";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Asks for the next step; `released()` says whether it was let through yet. */
function ask(member: StepMember): { released: () => boolean } {
  let released = false;
  void member.next().then(() => {
    released = true;
  });
  return { released: () => released };
}

const settle = () => vi.advanceTimersByTimeAsync(0);

/** Two streams, after a step of `ms` of the first alone (how long a step lasts is not known before). */
async function twoStreams(steps: DecodeSteps, ms: number): Promise<[StepMember, StepMember]> {
  const a = steps.join();
  const first = ask(a);
  await settle();
  expect(first.released()).toBe(true);
  await vi.advanceTimersByTimeAsync(ms);
  a.received();
  return [a, steps.join()];
}

test("streams are released together once each has asked, never while a step runs", async () => {
  const steps = new DecodeSteps();
  const [a, b] = await twoStreams(steps, 20);
  expect(steps.counts).toEqual({ steps: 1, shared: 0 });

  // b's consumer is still busy with its token: a waits for it (within a step's time).
  const first = ask(a);
  await vi.advanceTimersByTimeAsync(5);
  expect(first.released()).toBe(false);
  const second = ask(b);
  await settle();
  expect([first.released(), second.released()]).toEqual([true, true]);
  expect(steps.counts).toEqual({ steps: 2, shared: 1 });

  // While that step runs, a's token is back and it asks again: it waits for b's token.
  a.received();
  const third = ask(a);
  await vi.advanceTimersByTimeAsync(100);
  expect(third.released()).toBe(false);
  b.received();
  const fourth = ask(b);
  await settle();
  expect([third.released(), fourth.released()]).toEqual([true, true]);
  expect(steps.counts).toEqual({ steps: 3, shared: 2 });
});

test("a stream whose consumer stays busy is waited for about one step, then not until it asks", async () => {
  const steps = new DecodeSteps();
  const [a] = await twoStreams(steps, 20);

  const alone = ask(a);
  await vi.advanceTimersByTimeAsync(19);
  expect(alone.released()).toBe(false);
  await vi.advanceTimersByTimeAsync(2);
  expect(alone.released()).toBe(true);
  a.received();
  // b missed that step: a goes on without waiting for it.
  const again = ask(a);
  await settle();
  expect(again.released()).toBe(true);
  expect(steps.counts).toEqual({ steps: 3, shared: 0 });
});

test("a stream that leaves is no longer waited for", async () => {
  const steps = new DecodeSteps();
  const [a, b] = await twoStreams(steps, 20);
  const waiting = ask(a);
  await settle();
  expect(waiting.released()).toBe(false);
  b.leave();
  await settle();
  expect(waiting.released()).toBe(true);
});
