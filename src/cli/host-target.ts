import path from "node:path";
import { HostClient } from "../client-core/host-client.js";
import { nodeSocketFactory } from "../client-core/node-socket.js";
import { listServerStates } from "../config/server-state.js";
import { SparkError } from "../protocol/errors.js";
import type { AgentFlags } from "./agent-flags.js";
import { agentHostUrl, findWorkspaceServer } from "./workspace-server.js";

/** An agent host to attach to: its WebSocket address and key. */
export interface HostTarget {
  url: string;
  key: string | null;
}

/**
 * The running `spark serve` of this user for the workspace, when the flags leave the choice to
 * Spark: flags that set up the agent (a model, a server, a policy, a sandbox) need an agent of
 * this process, and `--no-attach` asks for one.
 */
export async function attachTarget(flags: AgentFlags): Promise<HostTarget | null> {
  const ownAgent =
    !flags.attach ||
    flags.model !== undefined ||
    flags.server !== undefined ||
    flags.approval !== "ask" ||
    flags.maxToolRounds !== undefined ||
    flags.maxOutputTokens !== undefined ||
    flags.compactAt !== undefined ||
    flags.sandbox !== undefined ||
    flags.ctxSize !== undefined ||
    !flags.prewarm;
  if (ownAgent) return null;
  const state = await findWorkspaceServer(flags.cd ?? process.cwd());
  return state ? { url: agentHostUrl(state.url), key: state.key } : null;
}

/** `spark attach [URL]`: the server named (its key from the state file when it is this user's). */
export async function attachUrl(
  url: string | undefined,
  cwd: string,
  apiKey: string | undefined,
): Promise<HostTarget> {
  if (!url) {
    const state = await findWorkspaceServer(cwd);
    if (!state)
      throw new SparkError(
        "not_found",
        `No spark serve of yours runs for ${path.resolve(cwd)}; start one there, or pass its URL.`,
      );
    return { url: agentHostUrl(state.url), key: apiKey ?? state.key };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SparkError("invalid_request", `Not a URL: ${url} (expected http://HOST:PORT).`);
  }
  if (!["http:", "https:", "ws:", "wss:"].includes(parsed.protocol))
    throw new SparkError("invalid_request", `Not an http(s) or ws(s) URL: ${url}.`);
  const base = `${parsed.protocol.replace(/^ws/, "http")}//${parsed.host}`;
  // The key of this user's running server at that address, if there is one.
  const local = (await listServerStates()).find((state) => state.url.replace(/\/+$/, "") === base);
  return { url: agentHostUrl(base), key: apiKey ?? local?.key ?? process.env.SPARK_API_KEY ?? null };
}

/** The client core's agent-host client, connected to `target`. */
export async function connectHost(target: HostTarget): Promise<HostClient> {
  const client = new HostClient({
    url: target.url,
    ...(target.key ? { apiKey: target.key } : {}),
    createSocket: nodeSocketFactory,
  });
  try {
    await client.connect();
  } catch (error) {
    client.dispose();
    throw new SparkError(
      "upstream_unavailable",
      `Cannot reach the agent host at ${target.url}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  return client;
}
