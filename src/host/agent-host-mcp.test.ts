import { afterEach, describe, expect, test } from "vitest";
import type { HostClient } from "../client-core/host-client.js";
import type { McpServerInfo } from "../protocol/agent.js";
import { MCP_SERVERS_LIMITS } from "../protocol/mcp-servers.js";
import type { AgentHostOptions } from "./agent-host.js";
import { connectHost, type HostTestClient } from "./test-support/host-client.js";
import { MemoryMcpServerList, mcpServer } from "./test-support/memory-mcp-server-list.js";
import { type Cleanups, connectCoreClient, serveThreadlessHost } from "./test-support/threadless-host.js";

type McpServersEvent = { type: "mcp.servers"; servers: McpServerInfo[] };

const cleanups: Cleanups = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const serve = (options: AgentHostOptions) => serveThreadlessHost(options, cleanups);

async function rawClient(url: string): Promise<HostTestClient> {
  const client = await connectHost(url);
  cleanups.push(() => client.ws.close());
  return client;
}

const coreClient = (url: string) => connectCoreClient(url, cleanups);

const isMcp = (event: { type: string }) => event.type === "mcp.servers";
/** The first `mcp.servers` at index `from` or later (default: the first of all). */
const nextMcp = async (client: HostTestClient, from = 0) =>
  (await client.next(isMcp, from)) as unknown as McpServersEvent;
const mcpEvents = (client: HostTestClient, from = 0) =>
  client.events.slice(from).filter(isMcp) as unknown as McpServersEvent[];

/** Resolves with the next list the client core accepts. */
const nextList = (client: HostClient) =>
  new Promise<McpServerInfo[]>((resolve) => {
    const off = client.on("mcp", (servers) => {
      off();
      resolve(servers);
    });
  });

describe("the agent host lists MCP servers to its clients (mcp.servers)", () => {
  test("a client that connects is sent the list first, and the client core keeps it", async () => {
    const servers = [
      mcpServer(),
      mcpServer({ name: "docs", state: "starting", transport: "http", tools: [], trusted: true }),
    ];
    const { url } = await serve({ mcp: new MemoryMcpServerList(servers) });
    const raw = await rawClient(url);
    expect(await nextMcp(raw)).toEqual({ type: "mcp.servers", servers });
    expect(raw.events[0]?.type).toBe("mcp.servers");
    const core = await coreClient(url);
    // The host sends the list right after the upgrade: it may arrive with the open.
    if (core.mcpServers.length === 0) await nextList(core);
    expect(core.mcpServers).toEqual(servers);
  });

  test("a state change reaches every connected client, whole", async () => {
    const list = new MemoryMcpServerList([mcpServer({ state: "starting", tools: [] })]);
    const { url } = await serve({ mcp: list });
    const a = await rawClient(url);
    const b = await rawClient(url);
    const core = await coreClient(url);
    await Promise.all([nextMcp(a), nextMcp(b)]);
    if (core.mcpServers.length === 0) await nextList(core);
    const [markA, markB] = [a.events.length, b.events.length];
    const coreList = nextList(core);
    list.update("everything", { state: "failed", error: "exited with code 1" });
    const expected = [mcpServer({ state: "failed", tools: [], error: "exited with code 1" })];
    expect(await nextMcp(a, markA)).toEqual({ type: "mcp.servers", servers: expected });
    expect(await nextMcp(b, markB)).toEqual({ type: "mcp.servers", servers: expected });
    expect(await coreList).toEqual(expected);
    expect(core.mcpServers).toEqual(expected);
  });

  test("a burst of changes goes out as one event holding the last state", async () => {
    const list = new MemoryMcpServerList([mcpServer({ state: "starting", tools: [] })]);
    const { url } = await serve({ mcp: list });
    const client = await rawClient(url);
    await nextMcp(client);
    const mark = client.events.length;
    list.set(mcpServer({ name: "docs", state: "starting", tools: [] }));
    await Promise.resolve();
    list.update("everything", { state: "ready", tools: ["mcp__everything__echo"] });
    await Promise.resolve();
    list.update("docs", { state: "ready", tools: ["mcp__docs__search"] });
    const burst = await nextMcp(client, mark);
    expect(burst.servers.map((server) => [server.name, server.state, server.tools])).toEqual([
      ["everything", "ready", ["mcp__everything__echo"]],
      ["docs", "ready", ["mcp__docs__search"]],
    ]);
    // A later change is the next event: nothing else was sent for the burst.
    list.update("docs", { state: "stopped", tools: [], error: "the server closed its connection" });
    const after = client.events.indexOf(burst as never) + 1;
    const next = await nextMcp(client, after);
    expect(next.servers[1]).toMatchObject({ name: "docs", state: "stopped" });
    expect(mcpEvents(client, mark)).toEqual([burst, next]);
  });

  test("an error text past the wire's bound is shortened, so the client core accepts it", async () => {
    const list = new MemoryMcpServerList([
      mcpServer({ state: "failed", tools: [], error: "x".repeat(MCP_SERVERS_LIMITS.errorChars * 3) }),
    ]);
    const { url } = await serve({ mcp: list });
    const core = await coreClient(url);
    const servers = core.mcpServers.length > 0 ? core.mcpServers : await nextList(core);
    expect(servers[0]?.error).toHaveLength(MCP_SERVERS_LIMITS.errorChars);
    expect(servers[0]?.error?.endsWith("…")).toBe(true);
  });

  test("without an MCP list nothing is sent; dispose stops listening to the list", async () => {
    const { url } = await serve({});
    const client = await rawClient(url);
    client.send({ type: "thread.list" });
    await client.next((event) => event.type === "thread.list");
    expect(mcpEvents(client)).toEqual([]);

    const list = new MemoryMcpServerList([mcpServer()]);
    const { host } = await serve({ mcp: list });
    expect(list.listenerCount).toBe(1);
    host.dispose();
    host.dispose();
    expect(list.listenerCount).toBe(0);
  });
});
