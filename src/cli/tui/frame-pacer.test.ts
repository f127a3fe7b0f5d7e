import { describe, expect, test } from "vitest";
import { FramePacer } from "./frame-pacer.js";

function pacer(share = 0.1) {
  const clock = { now: 1000 };
  return { clock, pacer: new FramePacer({ frameMs: 33, share, now: () => clock.now }) };
}

describe("FramePacer", () => {
  test("the first frame may start at once", () => {
    expect(pacer().pacer.wait()).toBeLessThanOrEqual(0);
  });

  test("cheap frames come at the frame rate", () => {
    const { clock, pacer: frames } = pacer();
    const drawn = frames.start();
    clock.now += 2;
    drawn();
    expect(frames.wait()).toBe(31);
    clock.now += 31;
    expect(frames.wait()).toBe(0);
  });

  test("a frame that took long to draw is followed by a pause in proportion, up to 250 ms", () => {
    const { clock, pacer: frames } = pacer(0.1);
    let drawn = frames.start();
    clock.now += 8;
    drawn();
    // 8 ms of drawing is a tenth of 80 ms.
    expect(frames.wait()).toBe(72);
    clock.now += 72;
    drawn = frames.start();
    clock.now += 100;
    drawn();
    expect(frames.wait()).toBe(150);
  });

  test("the pause follows the last frame's cost, not the worst one", () => {
    const { clock, pacer: frames } = pacer(0.1);
    let drawn = frames.start();
    clock.now += 20;
    drawn();
    clock.now += 200;
    drawn = frames.start();
    clock.now += 1;
    drawn();
    expect(frames.wait()).toBe(32);
  });
});
