import { RequestError } from "@agentclientprotocol/sdk";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { mcpToolName } from "../../agent/mcp/mcp-tool-name.js";
import { approvalTitle } from "../../protocol/agent.js";
import { promptInput } from "./acp-agent.js";
import { planEntries } from "./acp-plan.js";
import { finishedContent, streamingContent, toolKind, toolLocations, toolTitle } from "./acp-tool-calls.js";

const PATCH = JSON.stringify({
  patch: "*** Begin Patch\n*** Add File: src/new.ts\n+export const a = 1;\n*** End Patch",
});

describe("tool calls as an ACP client sees them", () => {
  test("kinds, titles and locations follow the tool and its arguments", () => {
    expect(
      ["read_file", "list_dir", "search", "apply_patch", "shell", "delegate", "mcp__gh__issues"].map(
        toolKind,
      ),
    ).toEqual(["read", "search", "search", "edit", "execute", "other", "other"]);
    expect(toolTitle("read_file", '{"path":"a.ts"}')).toBe("Read a.ts");
    expect(toolTitle("shell", '{"command":"npm test\\nnpm run lint"}')).toBe("$ npm test…");
    expect(toolTitle("apply_patch", PATCH)).toBe("Edit src/new.ts");
    expect(toolTitle("other", "{}")).toBe("other");
    expect(toolLocations("read_file", '{"path":"a.ts","start_line":3}', "/w")).toEqual([
      { path: "/w/a.ts", line: 3 },
    ]);
    expect(toolLocations("apply_patch", PATCH, "/w")).toEqual([{ path: "/w/src/new.ts" }]);
  });

  test("an MCP tool's call is titled as its permission question is (it was mcp__SERVER__TOOL, then SERVER · TOOL)", () => {
    // Server names as config.toml takes them, but for "__" in or "_" at the end of one: with those
    // the tool's name alone cannot say where the server's ends.
    const server = fc
      .stringMatching(/^[a-z0-9][a-z0-9_-]{0,23}$/)
      .filter((name) => !name.includes("__") && !name.endsWith("_"));
    const tool = fc.stringMatching(/^[A-Za-z0-9_-]{1,30}$/);
    fc.assert(
      fc.property(server, tool, (server, tool) => {
        const name = mcpToolName(server, tool);
        fc.pre(name !== null);
        expect(toolTitle(name!, "{}")).toBe(
          approvalTitle({ approval_id: "a", kind: "mcp", server, tool, arguments: "{}" }),
        );
      }),
    );
    expect(toolTitle("mcp__gh__list_issues", "{}")).toBe("gh · list_issues");
  });

  test("partial or hostile arguments never throw: they give what is known so far", () => {
    for (const partial of [
      "",
      "{",
      '{"path":',
      '{"patch":"*** Begin Patch\\n*** Upd',
      "[1,2]",
      "null",
      '"x"',
    ]) {
      for (const name of ["read_file", "shell", "apply_patch", "search", "list_dir", "other"]) {
        expect(typeof toolTitle(name, partial)).toBe("string");
        expect(Array.isArray(toolLocations(name, partial, "/w"))).toBe(true);
      }
    }
    expect(toolTitle("read_file", '{"path":')).toBe("Read a file");
  });

  test("a patch streams as a diff of the lines written so far; a new file has no old text", () => {
    const item = {
      type: "tool_call" as const,
      id: "c",
      name: "apply_patch",
      arguments: PATCH.slice(0, -2),
      status: "running" as const,
    };
    expect(streamingContent(item, "/w")).toEqual([
      { type: "diff", path: "/w/src/new.ts", oldText: null, newText: "export const a = 1;\n" },
    ]);
    expect(streamingContent({ ...item, name: "shell" }, "/w")).toEqual([]);
    const header = JSON.stringify({ patch: "*** Begin Patch\n*** Add File: src/new.ts\n" }).slice(0, -2);
    expect(streamingContent({ ...item, arguments: header }, "/w")).toEqual([]);
  });

  test("a finished call shows its applied diff, its command output, or its output", () => {
    const base = { type: "tool_call" as const, id: "c", arguments: "{}", status: "completed" as const };
    expect(
      finishedContent(
        {
          ...base,
          name: "apply_patch",
          display: {
            kind: "diff",
            files: [
              {
                path: "a.ts",
                kind: "update",
                added: 1,
                removed: 1,
                hunks: [
                  {
                    oldStart: 1,
                    oldLines: 2,
                    newStart: 1,
                    newLines: 2,
                    lines: [
                      { kind: "context", text: "x" },
                      { kind: "remove", text: "old" },
                      { kind: "add", text: "new" },
                    ],
                  },
                ],
              },
            ],
            diagnostics: [{ path: "a.ts", line: 2, column: 1, message: "bad" }],
          },
        },
        "/w",
      ),
    ).toEqual([
      { type: "diff", path: "/w/a.ts", oldText: "x\nold\n", newText: "x\nnew\n" },
      { type: "content", content: { type: "text", text: "Errors this edit introduced:\na.ts:2:1: bad" } },
    ]);
    expect(
      finishedContent(
        { ...base, name: "shell", display: { kind: "command", command: "ls", exitCode: 0, output: "a\n" } },
        "/w",
      ),
    ).toEqual([{ type: "content", content: { type: "text", text: "$ ls\na\n\n(exit code 0)" } }]);
    expect(finishedContent({ ...base, name: "read_file", output: "text" }, "/w")).toEqual([
      { type: "content", content: { type: "text", text: "text" } },
    ]);
  });
});

describe("a prompt's blocks as the turn's input", () => {
  test("text, links and embedded text resources; images, audio and empty prompts are refused", () => {
    expect(
      promptInput([
        { type: "text", text: "Look at " },
        { type: "resource_link", name: "a.ts", uri: "file:///w/a.ts" },
        { type: "resource", resource: { uri: "file:///w/b.ts", text: "const b = 2;" } },
      ]),
    ).toBe("Look at [a.ts](file:///w/a.ts)\n\nfile:///w/b.ts:\n```\nconst b = 2;\n```\n\n");
    expect(() => promptInput([{ type: "image", data: "AA", mimeType: "image/png" }])).toThrow(RequestError);
    expect(() => promptInput([{ type: "audio", data: "AA", mimeType: "audio/wav" }])).toThrow(/audio/);
    expect(() => promptInput([{ type: "resource", resource: { uri: "file:///x", blob: "AA" } }])).toThrow(
      /Binary/,
    );
    expect(() => promptInput([{ type: "text", text: "  " }])).toThrow(/empty/);
    expect(() => promptInput([{ type: "text", text: "x".repeat(1024 * 1024 + 1) }])).toThrow(/over/);
  });
});

describe("a plan-mode answer as plan entries", () => {
  test("top-level list items in order, bounded; an answer without a list has none", () => {
    expect(planEntries("Plan:\n1. One\n2) Two\n  - nested, skipped\n* Three\ntext")).toEqual(
      ["One", "Two", "Three"].map((content) => ({ content, priority: "medium", status: "pending" })),
    );
    expect(planEntries("No list here.\n\n-not a bullet")).toEqual([]);
    const many = planEntries(
      Array.from({ length: 80 }, (_, i) => `- step ${i} ${"x".repeat(600)}`).join("\n"),
    );
    expect(many).toHaveLength(50);
    expect(many[0]!.content.length).toBe(500);
  });
});
