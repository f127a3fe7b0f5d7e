import { describe, expect, test } from "vitest";
import type { McpServerInfo, McpServerState } from "../../protocol/agent.js";
import { mcpServerNotices } from "./mcp-server-notices.js";

const server = (name: string, state: McpServerState, error?: string): McpServerInfo => ({
  name,
  state,
  transport: "stdio",
  source: "user",
  trusted: false,
  tools: [],
  ...(error ? { error } : {}),
});

describe("mcpServerNotices", () => {
  test("one line when a server turns failed or stopped, none while it stays so or is fine", () => {
    const seen = new Map<string, McpServerState>();
    expect(mcpServerNotices(seen, [server("a", "starting"), server("b", "ready")])).toEqual([]);
    expect(mcpServerNotices(seen, [server("a", "failed", "spawn npx ENOENT"), server("b", "ready")])).toEqual(
      ["MCP server a failed: spawn npx ENOENT (/mcp lists the servers)"],
    );
    expect(
      mcpServerNotices(seen, [server("a", "failed", "spawn npx ENOENT"), server("b", "stopped")]),
    ).toEqual(["MCP server b stopped (/mcp lists the servers)"]);
    // Failed again after a restart: announced again.
    mcpServerNotices(seen, [server("a", "starting"), server("b", "stopped")]);
    expect(mcpServerNotices(seen, [server("a", "failed", "first\nsecond")])).toEqual([
      "MCP server a failed: first (/mcp lists the servers)",
    ]);
    // A server no longer listed is forgotten: listed failed again later, it is announced.
    expect(seen.has("b")).toBe(false);
    expect(mcpServerNotices(seen, [server("b", "failed")])).toEqual([
      "MCP server b failed (/mcp lists the servers)",
    ]);
  });

  test("a long error is cut to one short line", () => {
    const [line] = mcpServerNotices(new Map(), [server("a", "failed", "x".repeat(500))]);
    expect(line!.length).toBeLessThan(220);
    expect(line).toContain("…");
  });
});
