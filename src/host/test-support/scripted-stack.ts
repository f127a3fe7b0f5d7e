import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AgentThread } from "../../agent/agent-thread.js";
import type { AgentThreadOptions } from "../../agent/agent-thread-options.js";
import { Workspace } from "../../agent/workspace.js";
import { ResponsesClient } from "../../client/responses-client.js";
import { type Script, ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "../../server/model-registry.js";
import { SparkServer } from "../../server/spark-server.js";
import type { AgentHost } from "../agent-host.js";

/** "run…" asks for `true` in the shell, "long" answers `words`, anything else is echoed. */
export function echoScript(words: string): Script {
  return (request) => {
    const last = request.messages.at(-1);
    if (last?.role === "user" && last.content.startsWith("run")) {
      return { toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "true" }) }] };
    }
    if (last?.role === "user" && last.content === "long") return { text: words };
    return { text: `echo: ${last?.role === "user" ? last.content : "done"}` };
  };
}

/** `count` distinct words, for answers long enough to act on while they stream. */
export const manyWords = (count: number) => Array.from({ length: count }, (_, i) => `w${i}`).join(" ");

export interface ScriptedStack {
  /** The workspace: a temporary git repository. */
  dir: string;
  server: SparkServer;
  client: ResponsesClient;
  /** The agent host at `/v1/agent`, when one was asked for. */
  host: AgentHost | undefined;
  /** `ws://…/v1/agent`. */
  agentUrl: string;
  /** A new agent thread on this server and workspace. */
  newThread(options?: Partial<AgentThreadOptions>): AgentThread;
  close(): Promise<void>;
}

/**
 * A scripted model behind a real Spark server, reached through the real Responses client, in a
 * temporary git workspace holding `files`; with `host`, an agent host served at `/v1/agent`.
 */
export async function startScriptedStack(options: {
  script: Script;
  tokensPerSecond: number;
  files?: Record<string, string>;
  /** More models the server serves beside `scripted`, each a scripted engine of that id. */
  extraModels?: string[];
  host?: (stack: Omit<ScriptedStack, "host" | "close">) => AgentHost;
}): Promise<ScriptedStack> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-host-"));
  for (const [name, content] of Object.entries(options.files ?? {})) {
    await writeFile(path.join(dir, name), content);
  }
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const models = new ModelRegistry();
  models.add(
    "scripted",
    new ScriptedEngine({ script: options.script, tokensPerSecond: options.tokensPerSecond }),
  );
  for (const id of options.extraModels ?? []) {
    models.add(
      id,
      new ScriptedEngine({ id, script: options.script, tokensPerSecond: options.tokensPerSecond }),
    );
  }
  let host: AgentHost | undefined;
  const server = await SparkServer.start({
    models,
    ...(options.host ? { sockets: { "/v1/agent": (socket) => host!.accept(socket) } } : {}),
  });
  const client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  const parts = {
    dir,
    server,
    client,
    agentUrl: `${server.url.replace("http", "ws")}/v1/agent`,
    newThread: (threadOptions: Partial<AgentThreadOptions> = {}) =>
      new AgentThread({
        client,
        workspace: new Workspace(dir),
        instructions: "You are Spark.",
        ...threadOptions,
      }),
  };
  host = options.host?.(parts);
  return {
    ...parts,
    host,
    async close() {
      host?.dispose();
      await client.close();
      await server.close();
    },
  };
}
