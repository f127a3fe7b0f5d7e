import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { AgentThread } from "../agent/agent-thread.js";
import { Workspace } from "../agent/workspace.js";
import { ResponsesClient } from "../client/responses-client.js";
import type { GenerateRequest } from "../engine/engine.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { MAX_DRAFT_TEXT } from "../protocol/responses-request.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";
import { AgentHost } from "./agent-host.js";
import { connectHost } from "./test-support/host-client.js";

test("turn.draft reaches the model server as the next turn's draft; bad drafts are refused", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-host-draft-"));
  await writeFile(path.join(dir, "a.txt"), "a\n");
  execFileSync("git", ["init", "-q"], { cwd: dir });
  const requests: GenerateRequest[] = [];
  const engine = new ScriptedEngine({
    script: (request) => {
      requests.push(request);
      return { text: "ok" };
    },
  });
  const models = new ModelRegistry();
  models.add("scripted", engine);
  let client: ResponsesClient | undefined;
  const host = new AgentHost({
    create: async () =>
      new AgentThread({ client: client!, workspace: new Workspace(dir), instructions: "Be Spark." }),
    resume: async () => null,
    list: async () => [],
    rename: async () => null,
    remove: async () => false,
  });
  await using server = await SparkServer.start({ models, sockets: { "/v1/agent": (s) => host.accept(s) } });
  client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  const c = await connectHost(`${server.url.replace("http", "ws")}/v1/agent`);
  try {
    c.send({ type: "thread.start" });
    const threadId = (await c.next((e) => e.type === "thread.started")).thread_id!;
    c.send({ type: "turn.start", thread_id: threadId, input: "Fix the parser" });
    await c.next((e) => e.type === "turn.completed");

    c.send({ type: "turn.draft", thread_id: threadId, input: "Now add a te" });
    const draft = await engine.drafted(0);
    c.send({ type: "turn.start", thread_id: threadId, input: "Now add a test" });
    await c.next((e) => e.type === "turn.completed");

    const real = requests[1]!;
    expect(draft.text).toBe("Now add a te");
    // The draft carries the state the next turn sends: same chain, instructions and tools.
    expect(draft.messages).toEqual(real.messages.slice(0, -1));
    expect(real.messages.at(-1)).toEqual({ role: "user", content: "Now add a test" });
    expect(draft.tools).toEqual(real.tools);
    expect(draft.conversation).toBe(real.conversation);

    const mark = c.events.length;
    c.send({ type: "turn.draft", thread_id: threadId, input: "x".repeat(MAX_DRAFT_TEXT + 1) });
    expect((await c.next((e) => e.type === "error", mark)).error).toMatchObject({ code: "invalid_event" });
    c.send({ type: "turn.draft", thread_id: "thr_missing", input: "hi" });
    expect((await c.next((e) => e.type === "error", mark + 1)).error).toMatchObject({ code: "not_found" });
    expect(engine.drafts).toHaveLength(1);
  } finally {
    c.ws.close();
    host.interruptAll();
    await client.close();
  }
});
