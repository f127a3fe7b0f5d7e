import { describe, expect, test } from "vitest";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "./model-registry.js";
import { SparkServer } from "./spark-server.js";

const KEY = "k-health";
const LOCAL_PATH = "/home/someone/models/secret-project/weights.gguf";

/** A model load the test settles when it wants. */
function gatedLoad() {
  let finish!: (engine: ScriptedEngine) => void;
  let fail!: (error: Error) => void;
  const loading = new Promise<ScriptedEngine>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return { loading, finish, fail };
}

async function ready(url: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/health`);
  return { status: response.status, text: await response.text() };
}

async function health(url: string, key?: string): Promise<{ status: number; text: string }> {
  const response = await fetch(`${url}/healthz`, key ? { headers: { authorization: `Bearer ${key}` } } : {});
  return { status: response.status, text: await response.text() };
}

describe("GET /healthz", () => {
  test("without the key it says only whether the server is up; with it, the models and why one failed", async () => {
    const models = new ModelRegistry();
    const fast = gatedLoad();
    const deep = gatedLoad();
    models.add("fast", fast.loading);
    models.add("deep", deep.loading);
    models.setProgress("fast", 0.5);
    await using server = await SparkServer.start({ models, apiKeys: [KEY] });

    expect(await health(server.url)).toEqual({ status: 200, text: '{"status":"loading"}' });
    // What routers probe: unavailable until every model is ready, with or without a key.
    expect(await ready(server.url)).toEqual({ status: 503, text: '{"status":"unavailable"}' });
    const loading = await health(server.url, KEY);
    expect(loading.status).toBe(200);
    expect(JSON.parse(loading.text)).toEqual({
      status: "loading",
      models: [
        { id: "fast", status: "loading", progress: 0.5 },
        { id: "deep", status: "loading" },
      ],
    });

    fast.finish(new ScriptedEngine({ id: "fast" }));
    deep.fail(new Error(`${LOCAL_PATH} is not a GGUF model file`));
    await models.settled();

    for (const key of [undefined, "not-the-key"]) {
      const refused = await health(server.url, key);
      expect(refused).toEqual({ status: 503, text: '{"status":"error"}' });
      expect(refused.text).not.toContain("secret-project");
    }
    expect(await ready(server.url)).toEqual({ status: 503, text: '{"status":"unavailable"}' });
    const failed = await health(server.url, KEY);
    expect(failed.status).toBe(503);
    expect(JSON.parse(failed.text)).toEqual({
      status: "error",
      models: [
        { id: "fast", status: "ready" },
        { id: "deep", status: "failed", error: `${LOCAL_PATH} is not a GGUF model file` },
      ],
    });
  });

  test("ok once every model is ready; a server without keys shows the details to anyone", async () => {
    const models = new ModelRegistry();
    models.add("fast", new ScriptedEngine({ id: "fast" }));
    await using keyed = await SparkServer.start({ models, apiKeys: [KEY] });
    expect(await health(keyed.url)).toEqual({ status: 200, text: '{"status":"ok"}' });
    expect(await ready(keyed.url)).toEqual({ status: 200, text: '{"status":"ok"}' });
    await using open = await SparkServer.start({ models });
    expect(JSON.parse((await health(open.url)).text)).toEqual({
      status: "ok",
      models: [{ id: "fast", status: "ready" }],
    });
  });
});
