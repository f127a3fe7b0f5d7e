import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { type PromptProgress, PromptWarmup } from "./prompt-warmup.js";

/** A warm-up whose run reports `steps` and then ends as `outcome` says. */
async function warmUp(steps: [number, number][], outcome: "ok" | "fails") {
  const heard: PromptProgress[] = [];
  const warmup = new PromptWarmup(async (onProgress) => {
    for (const [evaluated, total] of steps) {
      await Promise.resolve();
      onProgress(evaluated, total);
    }
    if (outcome === "fails") throw new Error("the server went away");
  });
  warmup.on((progress) => heard.push(progress));
  await warmup.done;
  return { warmup, heard };
}

describe("PromptWarmup", () => {
  test("progress never goes back and ends done at 100%, whatever the run reports and however it ends", async () => {
    const step = fc.tuple(fc.nat(5000), fc.nat(5000));
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { maxLength: 20 }),
        fc.constantFrom("ok", "fails"),
        async (steps, outcome) => {
          const { warmup, heard } = await warmUp(steps, outcome as "ok" | "fails");
          const evaluated = heard.map((progress) => progress.evaluated);
          expect(evaluated).toEqual([...evaluated].sort((a, b) => a - b));
          for (const progress of heard) expect(progress.evaluated).toBeLessThanOrEqual(progress.total);
          expect(heard.filter((progress) => progress.done)).toHaveLength(1);
          const last = heard.at(-1)!;
          expect(last).toEqual(warmup.progress);
          expect(last.done).toBe(true);
          if (outcome === "ok") expect(last.evaluated).toBe(last.total);
        },
      ),
      { numRuns: 200 },
    );
  });

  test("a run that evaluated nothing (the prompt was cached) ends at 0 of 0", async () => {
    const { heard } = await warmUp([], "ok");
    expect(heard).toEqual([{ evaluated: 0, total: 0, done: true }]);
  });

  test("a failed run still ends, where it had got to", async () => {
    const { heard } = await warmUp(
      [
        [128, 2700],
        [256, 2700],
      ],
      "fails",
    );
    expect(heard).toEqual([
      { evaluated: 128, total: 2700, done: false },
      { evaluated: 256, total: 2700, done: false },
      { evaluated: 256, total: 2700, done: true },
    ]);
  });
});
