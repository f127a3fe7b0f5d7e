import { execFileSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { ServerProcess } from "../bench/internal/server-process.js";
import { ResponsesClient } from "../client/responses-client.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { FETCH_ROUTER, startVllmRouter, vllmRouterDir } from "../engine/upstream/test-support/vllm-router.js";
import { UpstreamEngine } from "../engine/upstream/upstream-engine.js";
import { startTestServer } from "../server/test-support/test-server.js";
import { AgentThread } from "./agent-thread.js";
import { recordResponseUsage } from "./test-support/response-usage.js";
import { Workspace } from "./workspace.js";

const routerDir = vllmRouterDir();
if (!routerDir)
  console.log(`the agent's tool loop behind a router is skipped: no vllm-router (${FETCH_ROUTER})`);

// The agent's whole loop through a real router: Spark's agent → Spark (upstream engine, the router
// declared as one) → vLLM's router → two `spark serve` replicas on the synthetic model. The
// replicas are Spark, not llama-server: this llama-server build ignores `tool_choice` for every
// template tried, so no call would come back (see README "Behind a router"); Spark's replicas force
// the call with a grammar. The call's output goes back on the next request of the same
// conversation, which the router keeps on the replica that holds its KV (the session header):
// that request finds the conversation cached.
test.skipIf(!routerDir)(
  "the agent's tool loop behind vLLM's router: the forced call runs, and its result goes back to the replica that has the conversation",
  async () => {
    const model = await testModelPath();
    const replicaArgs = ["--model", model, "--ctx-size", "16384", "--parallel", "1", "--threads", "1"];
    await using first = await ServerProcess.start(replicaArgs);
    await using second = await ServerProcess.start(replicaArgs);
    const modelId = path.basename(model, ".gguf");
    await using router = await startVllmRouter(
      routerDir!,
      [first, second].map((replica) => replica.baseUrl.replace(/\/v1$/, "")),
    );
    await using engine = await UpstreamEngine.create({
      replicas: [router.url],
      model: modelId,
      healthChecks: false,
      contextSize: 16384,
    });
    await using front = await startTestServer(engine);

    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-router-loop-"));
    execFileSync("git", ["init", "-q"], { cwd: dir });
    await writeFile(path.join(dir, "inventory.ts"), "export const items = [];\n");
    await using client = await ResponsesClient.connect({ baseUrl: `${front.server.url}/v1` });
    const thread = new AgentThread({
      client,
      workspace: new Workspace(dir),
      instructions: "You are Spark.",
      model: modelId,
      temperature: 0,
      maxToolRounds: 1,
    });
    const responses = recordResponseUsage(client, () => 0);
    let completed: unknown;
    thread.on((event) => {
      if (event.type === "turn.completed") completed = event;
    });
    await thread.startTurn("What files are here?", { toolChoice: { name: "list_dir" } });

    expect(completed, JSON.stringify(completed)).toMatchObject({ status: "completed" });
    const call = thread.history.find((item) => item.type === "tool_call");
    expect(call).toMatchObject({ name: "list_dir", status: "completed" });
    expect(call?.type === "tool_call" ? call.output : "").toContain("inventory.ts");
    // The request after the call carries the whole conversation; on the replica that wrote the
    // call, all of it but the call's output is cached (another replica would have none of it).
    expect(responses.length).toBeGreaterThanOrEqual(2);
    const [asked, answered] = responses as [(typeof responses)[0], (typeof responses)[0]];
    expect(answered.cached).toBeGreaterThanOrEqual(asked.input);
  },
  300_000,
);
