import { execFileSync } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import type { ResolvedConfig } from "../config/spark-config.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { McpServerState } from "../protocol/agent.js";
import { AgentRuntime } from "./agent-runtime.js";
import { scriptedTiers } from "./test-support/scripted-tiers.js";

const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

test("the runtime starts the config's MCP servers in the background and its threads offer their tools", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-mcp-runtime-"));
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const requests: GenerateRequest[] = [];
  const config: ResolvedConfig = {
    defaultTier: "fast",
    delegateTier: null,
    tiers: { fast: { engine: "llama" } },
    mcpServers: {
      everything: { command: process.execPath, args: [EVERYTHING, "stdio"], trusted: true, source: "user" },
    },
    sources: [],
  };
  const runtime = await AgentRuntime.start({
    cwd: dir,
    config,
    prewarm: false,
    sessionsDir: path.join(dir, "sessions"),
    loadTier: scriptedTiers({
      fast: {
        script: (request) => {
          requests.push(request);
          return requests.length === 1
            ? { toolCalls: [{ name: "mcp__everything__get-sum", arguments: '{"a":40,"b":2}' }] }
            : { text: "42" };
        },
      },
    }),
  });
  try {
    // start() returned without waiting for the server: it may still be starting.
    expect(["starting", "ready"] satisfies McpServerState[]).toContain(runtime.mcp.list()[0]!.state);
    await runtime.mcp.whenStarted();
    expect(runtime.mcp.list()[0]).toMatchObject({ name: "everything", state: "ready", source: "user" });
    const { thread } = await runtime.newThread();
    await thread.startTurn("add 40 and 2");
    expect(requests[0]!.tools?.map((tool) => tool.name)).toContain("mcp__everything__get-sum");
    expect(requests[1]!.messages.find((m) => m.role === "tool")?.content).toContain("42");
  } finally {
    await runtime.dispose();
  }
  // Disposing the runtime closed the server.
  expect(runtime.mcp.list()[0]).toMatchObject({ state: "stopped", error: "Spark closed it" });
});
