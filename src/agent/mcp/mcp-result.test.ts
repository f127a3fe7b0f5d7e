import { describe, expect, test } from "vitest";
import { MCP_MAX_OUTPUT_BYTES, mcpResultText } from "./mcp-result.js";
import { mcpToolName } from "./mcp-tool-name.js";

describe("mcpToolName", () => {
  test("names a tool mcp__SERVER__TOOL", () => {
    expect(mcpToolName("everything", "get-sum")).toBe("mcp__everything__get-sum");
  });

  test("refuses a name with characters outside [A-Za-z0-9_-], or one past 64 characters", () => {
    expect(mcpToolName("fs", "read file")).toBeNull();
    expect(mcpToolName("fs", "read.file")).toBeNull();
    expect(mcpToolName("fs", "")).toBeNull();
    const longest = "t".repeat(64 - "mcp__fs__".length);
    expect(mcpToolName("fs", longest)).toHaveLength(64);
    expect(mcpToolName("fs", `${longest}x`)).toBeNull();
  });
});

describe("mcpResultText", () => {
  test("joins text blocks and summarises every other kind in a line", () => {
    const text = mcpResultText({
      content: [
        { type: "text", text: "first" },
        { type: "image", mimeType: "image/png", data: "AAAA" },
        { type: "audio", mimeType: "audio/wav", data: "AAAAAA==" },
        { type: "resource_link", uri: "file:///a.txt", name: "a.txt" },
        { type: "resource", resource: { uri: "file:///b.txt", text: "inside b" } },
        {
          type: "resource",
          resource: { uri: "file:///c.bin", blob: "AAA=", mimeType: "application/octet-stream" },
        },
        { type: "mystery" },
      ],
    });
    expect(text).toBe(
      [
        "first",
        "[image image/png, 3 bytes]",
        "[audio audio/wav, 4 bytes]",
        "[resource link file:///a.txt (a.txt)]",
        "[resource file:///b.txt]\ninside b",
        "[resource file:///c.bin (application/octet-stream, 2 bytes)]",
        "[mystery content]",
      ].join("\n\n"),
    );
  });

  test("falls back to the structured content when there is no content", () => {
    expect(mcpResultText({ content: [], structuredContent: { sum: 3 } })).toBe('{"sum":3}');
    expect(mcpResultText({})).toBe("");
  });

  test("caps the output in bytes, keeping its start and end", () => {
    const text = mcpResultText({ content: [{ type: "text", text: `start${"x".repeat(1024 * 1024)}end` }] });
    expect(Buffer.byteLength(text)).toBeLessThan(MCP_MAX_OUTPUT_BYTES + 100);
    expect(text.startsWith("start")).toBe(true);
    expect(text.endsWith("end")).toBe(true);
    expect(text).toMatch(/bytes of output omitted/);
  });
});
