import { describe, expect, test } from "vitest";
import { alterSegments } from "./alter-segments.js";

const changedLines = (a: string, b: string) => {
  const left = a.split("\n");
  const right = b.split("\n");
  expect(right).toHaveLength(left.length);
  return left.filter((line, i) => line !== right[i]).length;
};

describe("alterSegments", () => {
  const file = Array.from({ length: 100 }, (_, i) => `const value${i} = compute(${i});`).join("\n");

  test("alters the given share of lines, spread out, keeping each line's length", () => {
    const altered = alterSegments(file, 0.1);
    expect(changedLines(file, altered)).toBe(10);
    expect(altered.length).toBe(file.length);
    expect(changedLines(file, alterSegments(file, 0.5))).toBe(50);
  });

  test("a short text still gets at least one alteration", () => {
    const story = "Once upon a time there was a girl who liked to play in the park with her dog. ".repeat(5);
    const altered = alterSegments(story, 0.1);
    expect(altered).not.toBe(story);
    expect(altered.length).toBe(story.length);
  });

  test("a share of 0 leaves the text as it is", () => {
    expect(alterSegments(file, 0)).toBe(file);
  });
});
