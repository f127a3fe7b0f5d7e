import { describe, expect, test } from "vitest";
import type { McpServerInfo } from "../protocol/agent.js";
import { mcpServerLabels } from "./mcp-server-labels.js";

const server: McpServerInfo = {
  name: "everything",
  state: "ready",
  transport: "stdio",
  source: "user",
  trusted: false,
  tools: ["mcp__everything__echo", "mcp__everything__get-sum"],
};

describe("mcpServerLabels", () => {
  test("a ready server: its state, tool count, transport, config and approval", () => {
    expect(mcpServerLabels(server)).toEqual({
      state: "ready",
      stateDescription: "everything: ready",
      tools: "2 tools",
      detail: "stdio · user config · asks before each call",
      error: null,
    });
    expect(
      mcpServerLabels({ ...server, tools: ["a"], trusted: true, transport: "http", source: "project" }),
    ).toMatchObject({ tools: "1 tool", detail: "http · project config · trusted: runs without asking" });
  });

  test("a failed or stopped server shows why; a starting one has no tools yet and no error", () => {
    const failed = mcpServerLabels({ ...server, state: "failed", tools: [], error: "spawn npx ENOENT" });
    expect(failed).toMatchObject({ state: "failed", tools: "", error: "spawn npx ENOENT" });
    expect(mcpServerLabels({ ...server, state: "failed", tools: [] }).error).toBe("It failed to start.");
    expect(mcpServerLabels({ ...server, state: "stopped", error: "closed" }).error).toBe("closed");
    expect(mcpServerLabels({ ...server, state: "starting", tools: [], error: "stale" })).toMatchObject({
      state: "starting",
      tools: "",
      error: null,
    });
  });
});
