import { describe, expect, test } from "vitest";
import { RepetitionGuard } from "./repetition-guard.js";

/** Feeds `text` in pieces of `size` characters, as a stream would; the guard's verdict. */
function fed(text: string, size = 3, guard = new RepetitionGuard()) {
  for (let i = 0; i < text.length; i += size) if (guard.push(text.slice(i, i + size))) break;
  return guard.repetition;
}

describe("RepetitionGuard", () => {
  test("nested JSON that opens the same key again and again is a loop, found within the minimum span", () => {
    const guard = new RepetitionGuard();
    let written = 0;
    const unit = '{"path": ';
    while (!guard.push(unit) && written < 10_000) written += unit.length;
    // The unit as the tail ends: the key, maybe begun at another character of it.
    expect(guard.repetition?.unit).toHaveLength(unit.length);
    expect(unit + unit).toContain(guard.repetition?.unit);
    expect(written).toBeLessThan(700);
  });

  test("one line written over and over is a loop; so is one paragraph", () => {
    expect(fed("The files here are:\n".repeat(60))).toMatchObject({ unit: "The files here are:\n" });
    const paragraph = `${"This repository holds a parser, its tests and a small command line tool. ".repeat(2)}\n`;
    expect(fed(paragraph.repeat(12), 7)).not.toBeNull();
  });

  test("code whose lines share most of their text is not a loop", () => {
    const lines = Array.from(
      { length: 400 },
      (_, i) => `  expect(parse("case ${i}")).toEqual({ ok: true, value: ${i} });\n`,
    ).join("");
    expect(fed(lines)).toBeNull();
  });

  test("short runs are not a loop: a rule of 80 '=' or a few repeated lines", () => {
    expect(fed(`${"=".repeat(80)}\n${"- item\n".repeat(20)}${"=".repeat(80)}\n`)).toBeNull();
  });

  test("a unit longer than maxPeriod is not looked for", () => {
    const unit = `${"x".repeat(20)}${Array.from({ length: 30 }, (_, i) => String.fromCharCode(97 + (i % 26))).join("")}`;
    expect(fed(unit.repeat(40), 5, new RepetitionGuard({ maxPeriod: 32 }))).toBeNull();
    expect(fed(unit.repeat(40), 5, new RepetitionGuard({ maxPeriod: 64 }))).not.toBeNull();
  });

  test("the same tool call written whole again and again repeats across boundaries", () => {
    const guard = new RepetitionGuard();
    for (let i = 0; i < 60 && !guard.repetition; i++) {
      guard.boundary();
      guard.push('{"path": "."}');
    }
    expect(guard.repetition).not.toBeNull();
  });

  test("a found loop stays found", () => {
    const guard = new RepetitionGuard({ minLength: 20, minRepeats: 4 });
    expect(guard.push("ab".repeat(20))).not.toBeNull();
    expect(guard.push("something else entirely")).toEqual(guard.repetition);
  });
});
