import fc from "fast-check";
import { describe, expect, test } from "vitest";
import type { ContextUsage } from "../protocol/agent.js";
import { contextLevel, contextMeterText, contextPercent, shortTokens } from "./context-meter.js";
import { emptyView, reduceView, type StampedEvent } from "./thread-view.js";

const usage = (used: number, window = 32_768, at = 26_214): ContextUsage => ({
  used_tokens: used,
  window_tokens: window,
  compact_at_tokens: at,
});

describe("the context meter", () => {
  test("reads as every face writes it", () => {
    expect(contextMeterText(null)).toBe("");
    expect(contextMeterText(usage(950))).toBe("ctx 950/32.8K 3%");
    expect(contextMeterText(usage(12_345, 128_000, 102_400))).toBe("ctx 12.3K/128K 10%");
    expect(shortTokens(1_048_576)).toBe("1.05M");
    expect(shortTokens(100_000)).toBe("100K");
  });

  test("the level turns as the conversation nears the compaction point", () => {
    expect(contextLevel(usage(1000))).toBe("ok");
    expect(contextLevel(usage(16_000))).toBe("filling");
    expect(contextLevel(usage(26_214))).toBe("full");
  });

  test("the percentage never goes back as the conversation grows", () => {
    fc.assert(
      fc.property(
        fc.nat(1_000_000),
        fc.nat(1_000_000),
        fc.integer({ min: 1, max: 1 << 20 }),
        (a, b, window) => {
          const [low, high] = a <= b ? [a, b] : [b, a];
          expect(contextPercent(usage(low, window))).toBeLessThanOrEqual(contextPercent(usage(high, window)));
        },
      ),
    );
  });

  test("the thread view keeps the latest context.updated, across a history snapshot but not a new thread", () => {
    const stamp = (event: object, seq: number) =>
      ({ ...event, thread_id: "t", seq, epoch: "e" }) as StampedEvent;
    let view = reduceView(
      emptyView("t"),
      stamp({ type: "context.updated", turn_id: "u", context: usage(10) }, 0),
      0,
    );
    view = reduceView(view, stamp({ type: "context.updated", context: usage(20) }, 1), 0);
    expect(view.context).toEqual(usage(20));
    view = reduceView(view, stamp({ type: "thread.history", items: [], reset: true }, 2), 0);
    expect(view.context).toEqual(usage(20));
    expect(view.entries).toEqual([]);
    const info = { id: "t", title: "", cwd: "/", model: "", createdAt: "", updatedAt: "" };
    view = reduceView(view, stamp({ type: "thread.started", thread: info }, 3), 0);
    expect(view.context).toBeNull();
  });
});
