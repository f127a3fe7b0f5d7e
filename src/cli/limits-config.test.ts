import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import WebSocket from "ws";
import { loadConfig } from "../config/spark-config.js";
import { startSparkServe } from "../engine/upstream/test-support/spark-serve-process.js";
import { connectHost } from "../host/test-support/host-client.js";
import { testEngineEnv } from "./test-support/test-engine.js";

async function userConfig(text: string): Promise<{ file: string; cwd: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-limits-"));
  const file = path.join(dir, "config.toml");
  await writeFile(file, text);
  return { file, cwd: dir };
}

const savedConfig = process.env.SPARK_CONFIG;
afterEach(() => {
  if (savedConfig === undefined) delete process.env.SPARK_CONFIG;
  else process.env.SPARK_CONFIG = savedConfig;
});

describe("[limits] in config.toml", () => {
  test("is read field by field, and a wrong or unknown field is refused, not clamped", async () => {
    const good = await userConfig(
      "[limits]\nmax_connections = 8\nmax_queued_mb = 2\nconnection_minutes = 30\nmax_tool_rounds = 20\n",
    );
    const config = await loadConfig({
      cwd: good.cwd,
      env: { SPARK_CONFIG: good.file, SPARK_HOME: good.cwd },
    });
    expect(config.limits).toEqual({
      max_connections: 8,
      max_queued_mb: 2,
      connection_minutes: 30,
      max_tool_rounds: 20,
    });
    for (const bad of [
      "max_connections = 0",
      "max_subagents = 1.5",
      "max_sockets = 4",
      "connection_minutes = 0",
      "max_tool_rounds = 0",
    ]) {
      const file = await userConfig(`[limits]\n${bad}\n`);
      await expect(
        loadConfig({ cwd: file.cwd, env: { SPARK_CONFIG: file.file, SPARK_HOME: file.cwd } }),
      ).rejects.toMatchObject({ code: "invalid_request" });
    }
  });

  test("bounds a running spark serve: its connections and each thread's queue", async () => {
    const { file } = await userConfig("[limits]\nmax_connections = 3\nmax_queued_turns = 1\n");
    process.env.SPARK_CONFIG = file;
    await using serve = await startSparkServe([], testEngineEnv({ tokensPerSecond: 20 }));
    const base = serve.url.replace(/^http/, "ws");
    const host = await connectHost(`${base}/agent`);
    host.send({ type: "thread.start", request_id: "start" });
    const threadId = (await host.next((e) => e.type === "ack" && e.request_id === "start")).thread_id;
    const long = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");
    host.send({ type: "turn.start", thread_id: threadId, input: long, request_id: "turn" });
    expect(await host.next((e) => e.request_id === "turn")).toMatchObject({ type: "ack" });
    host.send({ type: "turn.queue", thread_id: threadId, input: "one", request_id: "q1" });
    expect(await host.next((e) => e.request_id === "q1")).toMatchObject({ type: "ack" });
    host.send({ type: "turn.queue", thread_id: threadId, input: "two", request_id: "q2" });
    expect(await host.next((e) => e.request_id === "q2")).toMatchObject({
      type: "error",
      error: { code: "limit_reached" },
    });

    // The config allows 3: this host client, the agent host's own client of the model, and one more.
    const second = new WebSocket(`${base}/responses`);
    await new Promise((resolve, reject) => {
      second.once("open", resolve);
      second.once("error", reject);
    });
    const third = new WebSocket(`${base}/responses`);
    const status = await new Promise<number>((resolve, reject) => {
      third.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      third.once("open", () => reject(new Error("a fourth connection was accepted")));
    });
    expect(status).toBe(503);
    second.close();
    host.ws.close();
  });
});
