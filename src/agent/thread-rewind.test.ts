import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, expect, test } from "vitest";
import { ResponsesClient } from "../client/responses-client.js";
import { type Script, ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";
import { AgentThread } from "./agent-thread.js";
import { Workspace } from "./workspace.js";

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close();
});

test("a conversation rewind whose response the server forgot resends the kept items instead", async () => {
  const seen: string[][] = [];
  const script: Script = (request) => {
    seen.push(request.messages.flatMap((m) => (m.role === "user" ? [m.content] : [])));
    return { text: "ok" };
  };
  const models = new ModelRegistry();
  models.add("scripted", new ScriptedEngine({ script, tokensPerSecond: 0 }));
  // Two responses kept (and none by the connection): the one the rewind goes back to is gone by then.
  const server = await SparkServer.start({ models, storeCapacity: 2, connectionCacheBytes: 1 });
  const client = await ResponsesClient.connect({ baseUrl: `${server.url}/v1` });
  cleanup.push(async () => {
    await client.close();
    await server.close();
  });
  const bodies: { previous: string | undefined }[] = [];
  const create = client.create.bind(client);
  client.create = (body, options) => {
    bodies.push({ previous: body.previous_response_id ?? undefined });
    return create(body, options);
  };
  const thread = new AgentThread({
    client,
    workspace: new Workspace(await mkdtemp(path.join(os.tmpdir(), "spark-rewind-chain-"))),
    instructions: "You are Spark.",
  });
  const failed: string[] = [];
  thread.on((event) => {
    if (event.type === "turn.completed" && event.status !== "completed")
      failed.push(event.error?.message ?? "");
  });
  for (const input of ["one", "two", "three", "four"]) await thread.startTurn(input);
  const two = thread.history.find((item) => item.type === "user_message" && item.text === "two")!;
  await thread.rewind(two.id, "conversation");
  bodies.length = 0;
  seen.length = 0;
  await thread.startTurn("again");
  expect(failed).toEqual([]);
  // Tried from where the chain stood, then resent: the model saw the kept conversation and the new message.
  expect(bodies).toEqual([{ previous: expect.stringMatching(/^resp_/) }, { previous: undefined }]);
  expect(seen).toEqual([["one", "again"]]);
  // The chain goes on from the resent conversation.
  await thread.startTurn("more");
  expect(seen.at(-1)).toEqual(["one", "again", "more"]);
});
