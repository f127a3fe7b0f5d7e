import { describe, expect, test } from "vitest";
import { DraftPacer } from "./draft-pacer.js";

/** A pacer on a hand-driven clock: `advance` fires the timers that come due. */
function pacer() {
  let now = 0;
  let timers: { at: number; callback: () => void }[] = [];
  const sent: string[] = [];
  const p = new DraftPacer((text) => sent.push(text), {
    intervalMs: 150,
    now: () => now,
    schedule: (callback, ms) => {
      const timer = { at: now + ms, callback };
      timers.push(timer);
      return () => {
        timers = timers.filter((t) => t !== timer);
      };
    },
  });
  const advance = (ms: number) => {
    now += ms;
    const due = timers.filter((t) => t.at <= now);
    timers = timers.filter((t) => t.at > now);
    for (const t of due) t.callback();
  };
  const type = (text: string) => {
    for (let i = 1; i <= text.length; i++) p.update(text.slice(0, i));
  };
  return { p, sent, advance, type, pending: () => timers.length };
}

describe("DraftPacer", () => {
  test("sends only when a word is finished, not for each keystroke of the word being typed", () => {
    const { sent, type, advance } = pacer();
    type("Fix");
    expect(sent).toEqual([]);
    type("Fix the");
    expect(sent).toEqual(["Fix "]);
    advance(1000);
    expect(sent).toEqual(["Fix "]);
  });

  test("at most one draft per interval; the latest text goes out when it ends", () => {
    const { p, sent, advance } = pacer();
    p.update("Fix ");
    p.update("Fix the ");
    p.update("Fix the parser ");
    expect(sent).toEqual(["Fix "]);
    advance(149);
    expect(sent).toEqual(["Fix "]);
    advance(1);
    expect(sent).toEqual(["Fix ", "Fix the parser "]);
  });

  test("deleting a finished word sends again; reset drops what is pending and starts over", () => {
    const { p, sent, advance, pending } = pacer();
    p.update("Fix the ");
    advance(200);
    p.update("Fix ");
    expect(sent).toEqual(["Fix the ", "Fix "]);
    advance(10);
    p.update("Fix it ");
    expect(pending()).toBe(1);
    p.reset();
    expect(pending()).toBe(0);
    advance(500);
    expect(sent).toEqual(["Fix the ", "Fix "]);
    p.update("Fix ");
    expect(sent).toEqual(["Fix the ", "Fix ", "Fix "]);
  });

  test("white space alone is never sent", () => {
    const { p, sent, advance } = pacer();
    p.update("   ");
    p.update("  \n ");
    advance(500);
    expect(sent).toEqual([]);
  });
});
