import { describe, expect, test } from "vitest";
import { duration, formatDuration } from "./duration-option.js";
import { editDistance, mistypedCommand } from "./typo-suggestion.js";

const COMMANDS = [
  "exec",
  "resume",
  "attach",
  "serve",
  "models",
  "bench",
  "acp",
  "trust",
  "worktree",
  "doctor",
];

describe("mistypedCommand", () => {
  test("a bare word one slip from a command is that command", () => {
    expect(mistypedCommand("exce", COMMANDS)).toBe("exec");
    expect(mistypedCommand("srve", COMMANDS)).toBe("serve");
    expect(mistypedCommand("servee", COMMANDS)).toBe("serve");
    expect(mistypedCommand("modles", COMMANDS)).toBe("models");
    expect(mistypedCommand("wroktre", COMMANDS)).toBe("worktree");
  });

  test("commands, prompts and words far from every command are not", () => {
    for (const word of [
      "exec",
      "why does x fail",
      "fix",
      "test",
      "cap",
      "explain",
      "Exce",
      "list",
      "hello",
    ]) {
      expect(mistypedCommand(word, COMMANDS)).toBeNull();
    }
  });

  test("edit distance counts a swap of neighbours as one", () => {
    expect(editDistance("exce", "exec")).toBe(1);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("kitten", "sitting")).toBe(3);
  });
});

describe("duration options", () => {
  const parse = duration(1000, 3_600_000);
  test("take s, m, h and ms, or plain seconds", () => {
    expect(parse("90s")).toBe(90_000);
    expect(parse("5m")).toBe(300_000);
    expect(parse("1h")).toBe(3_600_000);
    expect(parse("1500ms")).toBe(1500);
    expect(parse("2.5m")).toBe(150_000);
    expect(parse("30")).toBe(30_000);
    expect(formatDuration(90_000)).toBe("90s");
    expect(formatDuration(300_000)).toBe("5m");
  });

  test("refuse garbage and values out of range", () => {
    for (const bad of ["", "soon", "5x", "-5s", "0s", "999ms", "2h", "1e3s", "5 m m"]) {
      expect(() => parse(bad)).toThrow(/expected a duration such as 90s, 5m or 1h, from 1s to 1h/);
    }
  });
});
