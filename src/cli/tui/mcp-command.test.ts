import "./test-support/force-color.js";
import { afterEach, describe, expect, test } from "vitest";
import { HostClient } from "../../client-core/host-client.js";
import { MemoryMcpServerList, mcpServer } from "../../host/test-support/memory-mcp-server-list.js";
import { threadlessHost } from "../../host/test-support/threadless-host.js";
import { socketPair } from "../../runtime/in-memory-socket.js";
import { tuiHarness } from "./test-support/tui-harness.js";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** The client core's HostClient on an in-process agent host listing `list`, as `spark` runs it. */
async function hostListing(list: MemoryMcpServerList): Promise<HostClient> {
  const host = threadlessHost({ mcp: list });
  const client = new HostClient({
    url: "memory://spark/v1/agent",
    createSocket: () => {
      const { host: end, client: socket } = socketPair();
      host.accept(end);
      return socket;
    },
  });
  cleanups.push(() => {
    client.dispose();
    host.dispose();
  });
  await client.connect();
  return client;
}

describe("/mcp in the terminal UI", () => {
  test("lists each server: state in words and colour, transport, config, approval, tools, error", async () => {
    const list = new MemoryMcpServerList([
      mcpServer(),
      mcpServer({
        name: "docs",
        state: "failed",
        transport: "http",
        source: "project",
        trusted: true,
        tools: [],
        error: "connection refused (http://127.0.0.1:9/mcp)",
      }),
      mcpServer({ name: "slow", state: "starting", tools: [] }),
    ]);
    await using h = await tuiHarness({}, { script: [{ text: "hi" }] });
    h.mount({ mcp: hostListing(list) });
    await h.stdout.waitForText("Ask Spark");
    await h.send("/mcp");
    const screen = await h.stdout.waitForText("● slow starting");
    expect(screen).toContain("MCP servers (3)");
    expect(screen).toContain("● everything ready  stdio · user config · asks before each call");
    expect(screen).toContain("2 tools: echo, get-sum");
    expect(screen).toContain("● docs failed  http · project config · trusted: runs without asking");
    expect(screen).toContain("connection refused (http://127.0.0.1:9/mcp)");
    const raw = h.stdout.lastFrame();
    expect(raw).toContain("\x1b[32mready");
    expect(raw).toContain("\x1b[31mfailed");
    expect(raw).toContain("\x1b[33mstarting");
    // A server listed as failed when the view opens is announced too.
    expect(screen).toContain("MCP server docs failed: connection refused");
  });

  test("with no servers it says how to add one", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "hi" }] });
    h.mount({ mcp: hostListing(new MemoryMcpServerList()) });
    await h.stdout.waitForText("Ask Spark");
    await h.send("/mcp");
    const screen = await h.stdout.waitForText("No MCP servers configured");
    expect(screen).toMatch(/No MCP servers configured — add \[mcp_servers\.NAME\] to \S*config\.toml/);
  });

  test("while Spark starts /mcp says it will work once started", async () => {
    await using h = await tuiHarness({}, { script: [{ text: "hi" }] });
    h.mount({ mcp: new Promise(() => {}) });
    await h.stdout.waitForText("Ask Spark");
    await h.send("/mcp");
    await h.stdout.waitForText("/mcp works once Spark has started.");
  });

  test("a server that fails or stops is announced in one line, once, without /mcp", async () => {
    const list = new MemoryMcpServerList([mcpServer({ state: "starting", tools: [] })]);
    await using h = await tuiHarness({}, { script: [{ text: "hi" }] });
    h.mount({ mcp: hostListing(list) });
    await h.stdout.waitForText("Ask Spark");
    list.update("everything", { state: "failed", error: "exited with code 1\nstack..." });
    await h.stdout.waitForText("MCP server everything failed: exited with code 1 (/mcp lists the servers)");
    // Still failed, another server changes: no second notice for it.
    list.set(mcpServer({ name: "docs", state: "ready" }));
    list.update("docs", { state: "stopped", error: "the server closed its connection" });
    const screen = await h.stdout.waitForText("MCP server docs stopped: the server closed its connection");
    expect(screen.split("MCP server everything failed").length - 1).toBe(1);
    expect(screen).not.toContain("stack...");
  });
});
