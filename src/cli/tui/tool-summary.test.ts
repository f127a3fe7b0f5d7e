import { describe, expect, test } from "vitest";
import { summarizeToolCall } from "./tool-summary.js";

const call = (name: string, args: unknown) => ({
  name,
  arguments: typeof args === "string" ? args : JSON.stringify(args),
});

describe("summarizeToolCall", () => {
  test("names what each known tool does in one line", () => {
    expect(summarizeToolCall(call("read_file", { path: "src/a.ts" }))).toBe("read_file src/a.ts");
    expect(summarizeToolCall(call("read_file", { path: "src/a.ts", start_line: 10, end_line: 20 }))).toBe(
      "read_file src/a.ts:10-20",
    );
    expect(summarizeToolCall(call("list_dir", {}))).toBe("list_dir .");
    expect(summarizeToolCall(call("search", { pattern: "foo" }))).toBe('search "foo"');
    expect(summarizeToolCall(call("search", { pattern: "a.*b", regex: true, path: "src" }))).toBe(
      'search "a.*b" (regex) in src',
    );
    expect(summarizeToolCall(call("shell", { command: "npm test\n  -- --watch" }))).toBe(
      "$ npm test -- --watch",
    );
    // A call without a command (its arguments refused) shows what the model sent, not a bare "shell".
    expect(summarizeToolCall(call("shell", { cmd_line: "ls -la" }))).toBe('shell {"cmd_line":"ls -la"}');
    expect(
      summarizeToolCall(
        call("apply_patch", { patch: "*** Begin Patch\n*** Update File: a.ts\n*** Add File: b.ts\n" }),
      ),
    ).toBe("apply_patch a.ts, b.ts");
  });

  test("prefers the finished call's display: files with counts, the command run", () => {
    const diff = {
      kind: "diff" as const,
      files: [{ path: "a.ts", kind: "update" as const, hunks: [], added: 3, removed: 1 }],
    };
    expect(summarizeToolCall({ ...call("apply_patch", {}), display: diff })).toBe("apply_patch a.ts (+3 -1)");
    expect(summarizeToolCall({ ...call("apply_patch", {}), display: diff }, { diffCounts: false })).toBe(
      "apply_patch a.ts",
    );
    expect(
      summarizeToolCall({
        ...call("shell", {}),
        display: { kind: "command", command: "ls", exitCode: 0, output: "" },
      }),
    ).toBe("$ ls");
  });

  test("an apply_patch being written names the files whose header lines are complete", () => {
    const partial = '{"patch": "*** Begin Patch\\n*** Update File: src/a.ts\\n+x\\n*** Add File: src/b';
    expect(summarizeToolCall(call("apply_patch", partial))).toBe("apply_patch src/a.ts");
    expect(summarizeToolCall(call("apply_patch", '{"patch": "*** Beg'))).toBe("apply_patch");
  });

  test("never throws on bad or unknown arguments, and cuts long ones", () => {
    expect(summarizeToolCall(call("read_file", "{not json"))).toBe("read_file ?");
    expect(summarizeToolCall(call("mystery", { x: 1 }))).toBe('mystery {"x":1}');
    const long = summarizeToolCall(call("search", { pattern: "x".repeat(300) }));
    expect(long.length).toBeLessThan(100);
    expect(long).toContain("...");
  });
});
