import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { HostClient } from "../../client-core/host-client.js";
import { nodeSocketFactory } from "../../client-core/node-socket.js";
import { AgentHost, type AgentHostOptions } from "../agent-host.js";

/** What a test runs after it: the servers and clients it started, stopped. */
export type Cleanups = (() => Promise<void> | void)[];

/** An agent host without threads: for what it serves besides them (catalog, MCP servers). */
export function threadlessHost(options: AgentHostOptions): AgentHost {
  return new AgentHost(
    {
      create: async () => {
        throw new Error("no threads here");
      },
      resume: async () => null,
      list: async () => [],
      rename: async () => null,
      remove: async () => false,
    },
    options,
  );
}

/** {@link threadlessHost} on a real WebSocket server, stopped by `cleanups`. */
export async function serveThreadlessHost(
  options: AgentHostOptions,
  cleanups: Cleanups,
): Promise<{ host: AgentHost; url: string }> {
  const host = threadlessHost(options);
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  wss.on("connection", (socket) => host.accept(socket));
  await new Promise((resolve) => wss.once("listening", resolve));
  cleanups.push(async () => {
    host.dispose();
    for (const socket of wss.clients) socket.terminate();
    await new Promise((resolve) => wss.close(resolve));
  });
  return { host, url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}` };
}

/** The client core's HostClient connected to `url`, disposed by `cleanups`. */
export async function connectCoreClient(url: string, cleanups: Cleanups): Promise<HostClient> {
  const client = new HostClient({ url, createSocket: nodeSocketFactory });
  cleanups.push(() => client.dispose());
  await client.connect();
  return client;
}
