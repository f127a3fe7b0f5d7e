import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type CreateBody, ResponsesClient } from "../../client/responses-client.js";
import { ScriptedEngine, type ScriptedEngineOptions } from "../../engine/scripted/scripted-engine.js";
import type { ThreadEvent } from "../../protocol/agent.js";
import { startTestServer, type TestServer } from "../../server/test-support/test-server.js";
import { AgentThread } from "../agent-thread.js";
import type { AgentThreadOptions } from "../agent-thread-options.js";
import { Workspace } from "../workspace.js";

export interface Harness extends AsyncDisposable {
  dir: string;
  engine: ScriptedEngine;
  /** The thread's Responses client (a test may replace its methods to inject failures). */
  client: ResponsesClient;
  thread: AgentThread;
  events: ThreadEvent[];
  server: TestServer;
  /** Every request body the thread sent, as it went on the wire (serialised). */
  sent: string[];
  /** Resolves with the next event of `type` (from now on, or from index `from`). */
  next<T extends ThreadEvent["type"]>(type: T, from?: number): Promise<Extract<ThreadEvent, { type: T }>>;
}

/**
 * A real agent on a temporary git repository: the scripted engine served by a real Spark server,
 * reached through the real Responses client. Nothing is mocked.
 */
export async function agentHarness(
  files: Record<string, string>,
  engineOptions: ScriptedEngineOptions,
  threadOptions: Partial<AgentThreadOptions> = {},
): Promise<Harness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-agent-"));
  for (const [name, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await writeFile(path.join(dir, name), content);
  }
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const engine = new ScriptedEngine(engineOptions);
  const server = await startTestServer(engine);
  const client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  const sent: string[] = [];
  const create = client.create.bind(client);
  client.create = (body: CreateBody, options) => {
    sent.push(JSON.stringify(body));
    return create(body, options);
  };
  const thread = new AgentThread({
    client,
    workspace: new Workspace(dir),
    instructions: "You are Spark.",
    ...threadOptions,
  });
  const events: ThreadEvent[] = [];
  const waiters: { type: string; from: number; resolve: (e: ThreadEvent) => void }[] = [];
  thread.on((event) => {
    events.push(event);
    const index = events.length - 1;
    for (const waiter of [...waiters]) {
      if (waiter.type === event.type && index >= waiter.from) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  });
  return {
    dir,
    engine,
    client,
    thread,
    events,
    server,
    sent,
    next(type, from = events.length) {
      const found = events.slice(from).find((e) => e.type === type);
      if (found) return Promise.resolve(found as never);
      return new Promise((resolve) => waiters.push({ type, from, resolve: resolve as never }));
    },
    async [Symbol.asyncDispose]() {
      thread.interrupt();
      await client.close();
      await server.server.close();
    },
  };
}

/** The tool names the model was offered in its last request. */
export function offeredTools(requests: { tools?: { name: string }[] }[]): string[] {
  return (requests.at(-1)?.tools ?? []).map((tool) => tool.name);
}
