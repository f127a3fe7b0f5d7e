import { describe, expect, test } from "vitest";
import type { ScriptedReply } from "../../engine/scripted/scripted-engine.js";
import { KEYS, waitForOutput } from "./test-support/fake-terminal.js";
import { tuiHarness } from "./test-support/tui-harness.js";
import { VirtualTerminal } from "./test-support/virtual-terminal.js";

const PATCH = ["*** Begin Patch", "*** Add File: notes.md", "+# Notes", "+first", "*** End Patch"].join("\n");

function inTurn(replies: ScriptedReply[]) {
  let turn = 0;
  return () => replies[Math.min(turn++, replies.length - 1)]!;
}

function count(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}

describe("on an interactive terminal (what a person sees, escape codes replayed)", () => {
  test("finished lines are printed once into the scrollback and the live part is redrawn in place", async () => {
    const paragraphs = Array.from({ length: 40 }, (_, i) => `Line ${i} of the answer.`).join("\n");
    await using h = await tuiHarness(
      {},
      {
        script: inTurn([
          {
            text: "Adding notes.",
            toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }],
          },
          { text: paragraphs },
        ]),
        tokensPerSecond: 400,
      },
    );
    const terminal = new VirtualTerminal(100, 20);
    const tui = h.mount({ stdout: terminal as unknown as NodeJS.WriteStream }, { interactive: true });
    const read = () => terminal.text();
    await waitForOutput(terminal, read, (t) => t.includes("Ask Spark"));
    await h.stdin.press("add notes");
    await waitForOutput(terminal, read, (t) => t.includes("add notes"));
    await h.stdin.press(KEYS.enter);
    const done = await waitForOutput(
      terminal,
      read,
      (t) => t.includes("Line 39 of the answer.") && /· idle/.test(t),
    );
    for (let i = 0; i < 40; i++) expect(count(done, `Line ${i} of the answer.`)).toBe(1);
    expect(count(done, "> add notes")).toBe(1);
    expect(count(done, "apply_patch notes.md")).toBe(1);
    expect(count(done, "notes.md +2 -0 (new file)")).toBe(1);
    expect(count(done, "+# Notes")).toBe(1);
    // The prompt and status line are drawn once, at the bottom.
    expect(count(done, "Ask Spark, or /help")).toBe(1);
    expect(done.split("\n").at(-1)).toMatch(/scripted · idle/);
    expect(done.indexOf("Line 39 of the answer.")).toBeLessThan(done.indexOf("Ask Spark"));
    await h.stdin.press(KEYS.ctrlD);
    await tui.exited;
  });
});
