import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../engine/engine.js";
import { ScriptedEngine } from "../engine/scripted/scripted-engine.js";
import { ModelRegistry } from "./model-registry.js";
import { SparkServer } from "./spark-server.js";

/** A model whose load the test finishes (or fails) when it wants. */
function gatedLoad() {
  let finish!: (engine: ScriptedEngine) => void;
  let fail!: (error: Error) => void;
  const loading = new Promise<ScriptedEngine>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  return { loading, finish, fail };
}

function lastUser(request: GenerateRequest): string {
  return [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
}

describe("a model that is still loading", () => {
  test("the server answers at once, reports the model loading with its progress, and serves once loaded", async () => {
    const models = new ModelRegistry();
    const gate = gatedLoad();
    models.add("fast", gate.loading);
    models.setProgress("fast", 0.43);
    await using server = await SparkServer.start({ models });
    const health = (await (await fetch(`${server.url}/healthz`)).json()) as { models: unknown };
    expect(health.models).toEqual([{ id: "fast", status: "loading", progress: 0.43 }]);

    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const seen: string[] = [];
    const answer = client.responses.create({ model: "fast", input: "Say hi" });
    gate.finish(
      new ScriptedEngine({
        id: "fast",
        script: (request) => {
          seen.push(lastUser(request));
          return { text: "Hi." };
        },
      }),
    );
    expect((await answer).output_text).toBe("Hi.");
    expect(seen).toEqual(["Say hi"]);
    const after = (await (await fetch(`${server.url}/healthz`)).json()) as { models: unknown };
    expect(after.models).toEqual([{ id: "fast", status: "ready" }]);
  });

  test("over WebSocket a response created during the load streams once the model is ready", async () => {
    const models = new ModelRegistry();
    const gate = gatedLoad();
    models.add("fast", gate.loading);
    await using server = await SparkServer.start({ models });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const ws = new ResponsesWS(client);
    const done = new Promise<string>((resolve, reject) => {
      ws.on("response.completed", (event) => resolve(event.response.output_text ?? ""));
      ws.on("error", reject);
    });
    let text = "";
    ws.on("response.output_text.delta", (event) => {
      text += event.delta;
    });
    ws.send({ type: "response.create", model: "fast", input: "hello" } as never);
    gate.finish(new ScriptedEngine({ id: "fast", script: [{ text: "Loaded and answering." }] }));
    await done;
    expect(text).toBe("Loaded and answering.");
    ws.close();
  });

  test("a load that fails fails the waiting request with the reason, and later ones at once", async () => {
    const models = new ModelRegistry();
    const gate = gatedLoad();
    models.add("fast", gate.loading);
    await using server = await SparkServer.start({ models });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const waiting = client.responses.create({ model: "fast", input: "hi" });
    gate.fail(new Error("not a GGUF file"));
    await expect(waiting).rejects.toMatchObject({ error: { code: "model_not_loaded" } });
    await expect(client.responses.create({ model: "fast", input: "hi" })).rejects.toMatchObject({
      status: 503,
      error: { code: "model_not_loaded", message: expect.stringContaining("not a GGUF file") },
    });
    const health = (await (await fetch(`${server.url}/healthz`)).json()) as { models: unknown };
    expect(health.models).toEqual([{ id: "fast", status: "failed", error: "not a GGUF file" }]);
  });

  test("a request cancelled while it waits never runs on the model", async () => {
    const models = new ModelRegistry();
    const gate = gatedLoad();
    models.add("fast", gate.loading);
    const waiting = models.resolve("fast");
    const stop = new AbortController();
    const events = (async () => {
      const seen = [];
      for await (const event of waiting.generate(
        { messages: [{ role: "user", content: "hi" }] },
        { signal: stop.signal },
      ))
        seen.push(event);
      return seen;
    })();
    stop.abort();
    const seen = await events;
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ type: "done", result: { stopReason: "cancelled" } });
    let ran = false;
    gate.finish(
      new ScriptedEngine({
        script: () => {
          ran = true;
          return { text: "no" };
        },
      }),
    );
    await models.settled();
    expect(ran).toBe(false);
    await models.dispose();
  });
});

describe("model names as clients expect", () => {
  test("a server with one model answers any model name with it and reports the model's own id", async () => {
    const models = new ModelRegistry();
    models.add("stories", new ScriptedEngine({ id: "stories", script: [{ text: "Once." }] }));
    await using server = await SparkServer.start({ models });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });

    const response = await client.responses.create({ model: "any", input: "Tell a story" });
    expect(response.output_text).toBe("Once.");
    expect(response.model).toBe("stories");
    const chat = await client.chat.completions.create({
      model: "gpt-4o",
      messages: [{ role: "user", content: "Tell a story" }],
    });
    expect(chat.choices[0]?.message.content).toBe("Once.");
    expect(chat.model).toBe("stories");

    // The README's SDK example: the WebSocket with `model: "any"`.
    const ws = new ResponsesWS(client);
    const created = new Promise<string>((resolve, reject) => {
      ws.on("response.completed", (event) => resolve(event.response.model));
      ws.on("error", reject);
    });
    ws.send({ type: "response.create", model: "any", input: "Tell a story" } as never);
    expect(await created).toBe("stories");
    ws.close();
  });

  test("with several models an unknown name is a 404 whose message lists them; a known one is served", async () => {
    const models = new ModelRegistry();
    models.add("fast", new ScriptedEngine({ id: "fast", script: [{ text: "quick" }] }));
    models.add("smart", new ScriptedEngine({ id: "smart", script: [{ text: "deep" }] }));
    await using server = await SparkServer.start({ models });
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });

    const refused = await client.responses.create({ model: "any", input: "hi" }).catch((error) => error);
    expect(refused).toMatchObject({ status: 404, error: { code: "model_not_found", param: "model" } });
    expect(refused.error.message).toContain("'fast'");
    expect(refused.error.message).toContain("'smart'");
    expect((await client.responses.create({ model: "smart", input: "hi" })).output_text).toBe("deep");
    // No name: the default (the first added).
    const unnamed = await fetch(`${server.url}/v1/responses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "hi" }),
    });
    expect(((await unnamed.json()) as { model: string }).model).toBe("fast");
  });

  test("/v1/models lists a model that is still loading, with its status, and not one that failed", async () => {
    const models = new ModelRegistry();
    const gate = gatedLoad();
    const broken = gatedLoad();
    models.add("fast", gate.loading);
    models.add("broken", broken.loading);
    broken.fail(new Error("not a GGUF file"));
    await using server = await SparkServer.start({ models });
    const list = async () =>
      ((await (await fetch(`${server.url}/v1/models`)).json()) as { data: unknown[] }).data;

    // The registry saw the failure first: it listened before this wait did.
    await broken.loading.catch(() => undefined);
    expect(await list()).toEqual([
      { id: "fast", object: "model", created: 0, owned_by: "spark", status: "loading" },
    ]);
    gate.finish(new ScriptedEngine({ id: "fast" }));
    await gate.loading;
    expect(await list()).toEqual([
      { id: "fast", object: "model", created: 0, owned_by: "spark", status: "ready" },
    ]);
  });
});
