import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AgentThread } from "../../agent/agent-thread.js";
import { Workspace } from "../../agent/workspace.js";
import { ResponsesClient } from "../../client/responses-client.js";
import { type Script, ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "../../server/model-registry.js";
import { SparkServer } from "../../server/spark-server.js";
import { AgentHost } from "../agent-host.js";

export interface HostedServer extends AsyncDisposable {
  server: SparkServer;
  /** `http://127.0.0.1:port` */
  url: string;
}

const echo: Script = (request) => {
  const last = request.messages.at(-1);
  return { text: `echo: ${last?.role === "user" ? last.content : "done"}` };
};

/**
 * A real server on a loopback port: the scripted engine ("scripted") behind `/v1/responses` and
 * Chat Completions, and an agent host at `/v1/agent` whose threads work in a fresh git repository.
 */
export async function startHostedServer(): Promise<HostedServer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-hosted-"));
  await writeFile(path.join(dir, "a.txt"), "a\n");
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const models = new ModelRegistry();
  models.add("scripted", new ScriptedEngine({ script: echo }));
  let client: ResponsesClient | undefined;
  const host = new AgentHost({
    create: async () => {
      if (!client) throw new Error("the server is not started yet");
      return new AgentThread({ client, workspace: new Workspace(dir), instructions: "You are Spark." });
    },
    resume: async () => null,
    list: async () => [],
    rename: async () => null,
    remove: async () => false,
  });
  const server = await SparkServer.start({
    models,
    sockets: { "/v1/agent": (socket) => host.accept(socket) },
  });
  client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  return {
    server,
    url: server.url,
    async [Symbol.asyncDispose]() {
      host.interruptAll();
      await client?.close();
      await server.close();
    },
  };
}
