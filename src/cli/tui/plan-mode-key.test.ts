import "./test-support/force-color.js";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { expect, test } from "vitest";
import { MATH, PATCH } from "../../agent/test-support/math-fixture.js";
import type { GenerateRequest } from "../../engine/engine.js";
import { tuiHarness } from "./test-support/tui-harness.js";

const SHIFT_TAB = "\x1b[Z";

test("Shift+Tab toggles plan mode: shown in the status bar, edits refused, and off again the edit runs", async () => {
  // Each turn asks for the patch, then answers with what its call returned.
  const script = (request: GenerateRequest) => {
    const last = request.messages.at(-1)!;
    if (last.role === "tool")
      return { text: last.content.startsWith("Not run") ? "Plan: fix add." : "Fixed." };
    return { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] };
  };
  await using h = await tuiHarness({ "src/math.ts": MATH }, { script });
  h.mount();
  await h.stdout.waitForText("Ask Spark");
  expect(h.stdout.screen()).not.toContain("plan mode (Shift+Tab)");
  await h.stdin.press(SHIFT_TAB);
  await h.stdout.waitForText("plan mode (Shift+Tab)");
  expect(h.thread.mode).toBe("plan");
  await h.send("fix add");
  await h.stdout.waitFor((f) => f.includes("Plan: fix add.") && f.includes("idle"));
  expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH);

  await h.stdin.press(SHIFT_TAB);
  await h.stdout.waitFor((f) => !f.includes("plan mode (Shift+Tab)"));
  expect(h.thread.mode).toBe("default");
  await h.send("Implement the plan above.");
  await h.stdout.waitFor((f) => f.includes("Fixed.") && f.includes("idle"));
  expect(await readFile(path.join(h.dir, "src/math.ts"), "utf8")).toBe(MATH.replace("a - b", "a + b"));
});

test("/plan (the README's plan mode) toggles plan mode as Shift+Tab does; /plan off and /plan on set it", async () => {
  await using h = await tuiHarness({}, {});
  h.mount();
  await h.stdout.waitForText("Ask Spark");
  await h.send("/plan");
  await h.stdout.waitFor((f) => f.includes("Plan mode on") && f.includes("plan mode (Shift+Tab)"));
  expect(h.thread.mode).toBe("plan");
  await h.send("/plan on");
  expect(h.thread.mode).toBe("plan");
  await h.send("/plan off");
  await h.stdout.waitFor((f) => f.includes("Plan mode off") && !f.includes("plan mode (Shift+Tab)"));
  expect(h.thread.mode).toBe("default");
  await h.send("/plan maybe");
  await h.stdout.waitForText("Unknown argument 'maybe': /plan, /plan on or /plan off.");
  expect(h.thread.mode).toBe("default");
  await h.send("/plan");
  await h.stdout.waitForText("plan mode (Shift+Tab)");
  expect(h.thread.mode).toBe("plan");
});
