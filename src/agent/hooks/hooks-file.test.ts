import { describe, expect, test } from "vitest";
import { hookMatches, parseHooksFile } from "./hooks-file.js";

const FILE = "/home/me/.config/spark/hooks.json";
const parse = (value: unknown) =>
  parseHooksFile(typeof value === "string" ? value : JSON.stringify(value), FILE);
const one = (hook: object, matcher?: string) => ({
  hooks: { PreToolUse: [{ ...(matcher === undefined ? {} : { matcher }), hooks: [hook] }] },
});

describe("hooks.json", () => {
  test("the common shape: events, matchers, commands with their time budget", () => {
    const { hooks, skipped } = parse({
      description: "guards",
      hooks: {
        PreToolUse: [
          { matcher: "apply_patch|shell", hooks: [{ type: "command", command: "./guard.sh", timeout: 5 }] },
        ],
        Stop: [{ hooks: [{ type: "command", command: "make test" }] }],
      },
    });
    expect(skipped).toEqual([]);
    expect(hooks.map(({ event, command, timeoutMs, file }) => ({ event, command, timeoutMs, file }))).toEqual(
      [
        { event: "PreToolUse", command: "./guard.sh", timeoutMs: 5000, file: FILE },
        { event: "Stop", command: "make test", timeoutMs: 60_000, file: FILE },
      ],
    );
    expect(hookMatches(hooks[0]!, "shell")).toBe(true);
    expect(hookMatches(hooks[0]!, "apply_patch")).toBe(true);
    // A matcher is over the whole name.
    expect(hookMatches(hooks[0]!, "shell_x")).toBe(false);
    expect(hookMatches(hooks[0]!, "read_file")).toBe(false);
    expect(hookMatches(hooks[1]!, "anything")).toBe(true);
  });

  test("matchers: empty and * match every tool, others are regular expressions", () => {
    for (const matcher of ["", "*"]) {
      expect(hookMatches(parse(one({ type: "command", command: "x" }, matcher)).hooks[0]!, "read_file")).toBe(
        true,
      );
    }
    const mcp = parse(one({ type: "command", command: "x" }, "mcp__.*")).hooks[0]!;
    expect(hookMatches(mcp, "mcp__github__search")).toBe(true);
    expect(hookMatches(mcp, "read_file")).toBe(false);
  });

  test("events and hook types Spark does not run are skipped, each with a line saying so", () => {
    const { hooks, skipped } = parse({
      hooks: {
        Notification: [{ hooks: [{ type: "command", command: "notify-send hi" }] }],
        PostToolUse: [
          {
            hooks: [
              { type: "http", url: "https://example.com" },
              { type: "command", command: "fmt" },
            ],
          },
        ],
      },
    });
    expect(hooks.map((hook) => hook.command)).toEqual(["fmt"]);
    expect(skipped).toEqual([
      `${FILE}: Notification hooks are not run by Spark (it runs SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, PreCompact).`,
      `${FILE}: a PostToolUse hook of type 'http' is not run (Spark runs type 'command').`,
    ]);
  });

  test.each([
    ["{ not json", /is not a valid hooks file: it is not valid JSON/],
    [{}, /at 'hooks'/],
    [{ hooks: [] }, /at 'hooks'/],
    [one({ type: "command" }), /at 'hooks\.PreToolUse\[0\]\.hooks\[0\]/],
    [
      one({ type: "command", command: "x", timeout: 601 }),
      /at 'hooks\.PreToolUse\[0\]\.hooks\[0\]\.timeout'/,
    ],
    [one({ type: "command", command: "x", timeout: -1 }), /timeout/],
    [one({ type: "command", command: "x", async: true }), /async/],
    [{ hooks: { Stop: [{ matcher: "x", hooks: [], extra: 1 }] } }, /at 'hooks\.Stop\[0\]/],
    [
      one({ type: "command", command: "x" }, "(unclosed"),
      /'hooks\.PreToolUse\[0\]\.matcher' is not a valid regular expression/,
    ],
    [
      { hooks: { Stop: [{ hooks: Array.from({ length: 65 }, () => ({ type: "command", command: "x" })) }] } },
      /65 hook commands, more than 64/,
    ],
    ["x".repeat(300 * 1024), /over 256 KiB/],
  ])("a malformed file is refused whole, naming the file and the field (%#)", (value, why) => {
    expect(() => parse(value)).toThrow(why);
    expect(() => parse(value)).toThrow(`${FILE} is not a valid hooks file`);
    expect(() => parse(value)).toThrow("None of its hooks run.");
  });
});
