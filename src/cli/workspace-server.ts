import { realpath } from "node:fs/promises";
import { listServerStates, type ServerState, type ServerStateOptions } from "../config/server-state.js";

/**
 * The newest running `spark serve` of this user whose workspace is `cwd` (compared as real paths),
 * found through the per-user state files; null when there is none. One server hosts the one
 * workspace it was started in.
 */
export async function findWorkspaceServer(
  cwd: string,
  options: ServerStateOptions = {},
): Promise<ServerState | null> {
  const here = await realpath(cwd).catch(() => cwd);
  for (const state of await listServerStates(options)) {
    const workspace = await realpath(state.workspace).catch(() => state.workspace);
    if (workspace === here) return state;
  }
  return null;
}

/** The agent host's WebSocket address of a server (`ws://HOST:PORT/v1/agent`). */
export function agentHostUrl(serverUrl: string): string {
  return `${serverUrl.replace(/^http/, "ws").replace(/\/+$/, "")}/v1/agent`;
}
