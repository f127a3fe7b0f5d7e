import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "../model-registry.js";
import { SparkServer } from "../spark-server.js";

const long = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");

describe("admission per tier", () => {
  test("a model served under a tier's name runs under that tier's limits", async () => {
    const models = new ModelRegistry();
    models.add("fast", new ScriptedEngine({ id: "fast" }));
    models.add(
      "deep",
      new ScriptedEngine({ id: "deep", tokensPerSecond: 50, script: () => ({ text: long }) }),
    );
    await using server = await SparkServer.start({
      models,
      admission: { tiers: { deep: { maxConcurrent: 1, maxQueue: 0 } } },
    });
    const post = (model: string, stream = false) =>
      fetch(`${server.url}/v1/responses`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model, input: "hi", stream }),
      });
    const running = await post("deep", true);
    expect(running.status).toBe(200);
    // The deep tier is full (one running, no queue); the fast tier is not limited.
    expect((await post("deep")).status).toBe(429);
    expect((await post("fast")).status).toBe(200);
    await running.body?.cancel();
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('model="deep",tier="deep"');
    expect(metrics).toContain('model="fast",tier="default"');
  });
});
