import { setImmediate as nextTurn } from "node:timers/promises";
import { describe, expect, test } from "vitest";
import { SLOW_PATTERN, slowLine } from "../test-support/slow-regex.js";
import { ToolError } from "../tool-error.js";
import { PatternMatcher } from "./pattern-matcher.js";

const start = (pattern: string, regex: boolean, signal = new AbortController().signal) =>
  PatternMatcher.start({ pattern, regex, maxLineChars: 300, signal });

describe("PatternMatcher", () => {
  test("matches text and RE2 regexes line by line, with 1-based line numbers and a limit", async () => {
    await using text = await start("needle", false);
    expect(await text.match("a\nneedle here\r\nb\nneedle", 10)).toEqual([
      { line: 2, text: "needle here" },
      { line: 4, text: "needle" },
    ]);
    expect(await text.match("needle\nneedle\nneedle", 2)).toHaveLength(2);
    await using regex = await start("(?i)^const \\w+ = \\d+;$", true);
    expect(await regex.match("CONST a = 1;\nconst b = x;\nconst c = 22;", 10)).toEqual([
      { line: 1, text: "CONST a = 1;" },
      { line: 3, text: "const c = 22;" },
    ]);
  });

  test("a catastrophic-backtracking pattern runs in linear time and gives the right answer", async () => {
    await using matcher = await start("(a+)+$", true);
    expect(await matcher.match(`${"a".repeat(40)}!`, 10)).toEqual([]);
    expect(await matcher.match(`${"a".repeat(40)}!\n${"a".repeat(40)}`, 10)).toEqual([
      { line: 2, text: "a".repeat(40) },
    ]);
  });

  test("patterns RE2 does not support are refused with an error the model can act on", async () => {
    for (const pattern of ["(a)\\1", "a(?=b)", "(?<!a)b", "foo("]) {
      const error = await start(pattern, true).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).code).toBe("invalid_arguments");
      expect((error as ToolError).message).toContain("RE2");
      expect((error as ToolError).message).toContain("regex: false");
    }
  });

  test("the event loop stays free while a match runs, and an abort ends the worker mid-match", async () => {
    const controller = new AbortController();
    const matcher = await start(SLOW_PATTERN, true, controller.signal);
    let settled = false;
    const match = matcher.match(slowLine(), 10).finally(() => {
      settled = true;
    });
    // Several event-loop turns pass while the worker is still busy with the one long line.
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(settled).toBe(false);
    controller.abort(new Error("stop"));
    await expect(match).rejects.toThrow("stop");
    await matcher.exited;
    await expect(matcher.match("a", 1)).rejects.toThrow("stop");
  });

  test("an aborted signal refuses to start", async () => {
    const controller = new AbortController();
    controller.abort(new Error("already"));
    await expect(start("x", false, controller.signal)).rejects.toThrow("already");
  });
});
