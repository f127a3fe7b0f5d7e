import { describe, expect, test } from "vitest";
import type { McpServerInfo } from "./agent.js";
import { decodeMcpServers, MCP_SERVERS_LIMITS } from "./mcp-servers.js";

const server: McpServerInfo = {
  name: "everything",
  state: "failed",
  transport: "stdio",
  source: "project",
  trusted: false,
  tools: ["mcp__everything__echo"],
  error: "exited with code 1",
};

describe("decodeMcpServers (an mcp.servers event from the host)", () => {
  test("a valid list comes back as is, with unknown fields dropped", () => {
    expect(decodeMcpServers([server, { ...server, name: "b", state: "ready", extra: 1 }])).toEqual({
      ok: true,
      servers: [server, { ...server, name: "b", state: "ready" }],
    });
    expect(decodeMcpServers([])).toEqual({ ok: true, servers: [] });
  });

  test.each([
    ["not an array", { servers: [] }, "servers is not an array"],
    ["a server that is not an object", [null], "servers[0] is not an object"],
    ["an empty name", [{ ...server, name: "" }], "servers[0].name"],
    ["a repeated name", [server, server], 'servers[1].name repeats the server "everything"'],
    ["an unknown state", [{ ...server, state: "crashed" }], "servers[0].state is not one of"],
    ["an unknown transport", [{ ...server, transport: "sse" }], "servers[0].transport"],
    ["an unknown source", [{ ...server, source: "remote" }], "servers[0].source"],
    ["trusted as a string", [{ ...server, trusted: "yes" }], "servers[0].trusted is not a boolean"],
    ["a tool that is not a string", [{ ...server, tools: ["a", 2] }], "servers[0].tools[1]"],
    ["an error that is not a string", [{ ...server, error: { message: "x" } }], "servers[0].error"],
  ])("rejects %s", (_, value, reason) => {
    const decoded = decodeMcpServers(value);
    expect(decoded.ok).toBe(false);
    expect(decoded.ok ? "" : decoded.reason).toContain(reason);
  });

  test("rejects, rather than cuts, a list past any bound", () => {
    const tooMany = Array.from({ length: MCP_SERVERS_LIMITS.servers + 1 }, (_, i) => ({
      ...server,
      name: `s${i}`,
    }));
    const cases: unknown[] = [
      tooMany,
      [{ ...server, name: "n".repeat(MCP_SERVERS_LIMITS.nameChars + 1) }],
      [
        {
          ...server,
          tools: Array.from({ length: MCP_SERVERS_LIMITS.toolsPerServer + 1 }, (_, i) => `t${i}`),
        },
      ],
      [{ ...server, tools: ["t".repeat(MCP_SERVERS_LIMITS.toolNameChars + 1)] }],
      [{ ...server, error: "e".repeat(MCP_SERVERS_LIMITS.errorChars + 1) }],
    ];
    for (const value of cases) expect(decodeMcpServers(value).ok).toBe(false);
    // At the bounds exactly, it is accepted.
    expect(
      decodeMcpServers([
        {
          ...server,
          name: "n".repeat(MCP_SERVERS_LIMITS.nameChars),
          error: "e".repeat(MCP_SERVERS_LIMITS.errorChars),
        },
      ]).ok,
    ).toBe(true);
  });
});
