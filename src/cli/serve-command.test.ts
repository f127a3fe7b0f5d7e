import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import OpenAI from "openai";
import { describe, expect, test } from "vitest";
import WebSocket from "ws";
import { loadConfig } from "../config/spark-config.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { startSparkServe } from "../engine/upstream/test-support/spark-serve-process.js";
import { isLoopbackHost, serveKeys } from "./serve-options.js";
import { startingTier } from "./starting-tier.js";
import { sparkBin as bin } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

/** Runs the real `spark` binary (built by `npm test` first). */
function spark(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): { child: ChildProcess; stderr: () => string; exit: Promise<number> } {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exit = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  return { child, stderr: () => stderr, exit };
}

async function waitFor(
  read: () => string,
  pattern: RegExp,
  exit: Promise<number>,
): Promise<RegExpMatchArray> {
  for (;;) {
    const match = read().match(pattern);
    if (match) return match;
    const ended = await Promise.race([
      exit.then(() => true),
      new Promise<false>((r) => setTimeout(() => r(false), 50)),
    ]);
    if (ended) throw new Error(`spark exited early:\n${read()}`);
  }
}

/** The status of a WebSocket upgrade to the agent host: 101 when accepted, else the HTTP status. */
function agentUpgrade(url: string, key?: string): Promise<number> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${url.replace(/^http/, "ws")}/v1/agent`, {
      ...(key ? { headers: { Authorization: `Bearer ${key}` } } : {}),
    });
    socket.once("open", () => {
      socket.close();
      resolve(101);
    });
    socket.once("unexpected-response", (_req, res) => {
      resolve(res.statusCode ?? 0);
      socket.terminate();
    });
    socket.once("error", () => resolve(0));
  });
}

async function stateHome(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), "spark-serve-state-"));
}

describe("spark serve (the real binary)", () => {
  test("serves the scripted engine until Ctrl+C, then exits cleanly", async () => {
    const run = spark(["serve", "--port", "0", "--no-auth"], {
      SPARK_HOME: await stateHome(),
      ...testEngineEnv(),
    });
    const [, url] = await waitFor(run.stderr, /HTTP\s+(http:\/\/\S+)\/v1/, run.exit);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
    const response = await client.responses.create({ model: "scripted", input: "ping" });
    expect(response.output_text).toBe("You said: ping");
    run.child.kill("SIGINT");
    expect(await run.exit).toBe(0);
  });

  test("by default requires a random key, kept in a 0600 state file that is removed on exit", async () => {
    const home = await stateHome();
    const run = spark(["serve", "--port", "0"], { SPARK_HOME: home, ...testEngineEnv() });
    const [, url, port] = await waitFor(run.stderr, /HTTP\s+(http:\/\/127\.0\.0\.1:(\d+))\/v1/, run.exit);
    await waitFor(run.stderr, /Press Ctrl\+C/, run.exit);
    const file = path.join(home, "servers", `${port}.json`);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(home, "servers"))).mode & 0o777).toBe(0o700);
    const state = JSON.parse(await readFile(file, "utf8"));
    expect(state).toMatchObject({ port: Number(port), pid: run.child.pid, url, workspace: process.cwd() });
    expect(state.key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(run.stderr()).toContain(`API key    required; kept for local clients in ${file}`);

    expect(await agentUpgrade(url!)).toBe(401);
    expect(await agentUpgrade(url!, "wrong")).toBe(401);
    expect(await agentUpgrade(url!, state.key)).toBe(101);
    const anonymous = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
    await expect(anonymous.responses.create({ model: "scripted", input: "ping" })).rejects.toMatchObject({
      status: 401,
    });
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: state.key, maxRetries: 0 });
    expect((await client.responses.create({ model: "scripted", input: "ping" })).output_text).toBe(
      "You said: ping",
    );

    run.child.kill("SIGINT");
    expect(await run.exit).toBe(0);
    await expect(stat(file)).rejects.toMatchObject({ code: "ENOENT" });
  });

  test("a llama model's ready line says its backend, CPU variant and threads", async () => {
    await using serve = await startSparkServe(["--model", await testModelPath(), "--threads", "1"]);
    await serve.stderrMatches(/^Model ready in/m);
    expect(serve.stderr()).toMatch(
      /^Model ready in [\d.]+ s: [\w.-]+, \d+ tokens of context, backend (cpu|cuda|vulkan|metal), CPU variant [a-z0-9_]+, 1 thread$/m,
    );
  }, 60_000);

  test("a gguf served without a config is named as the in-process face names it (it was named after the file)", async () => {
    const noConfig = { XDG_CONFIG_HOME: await stateHome(), SPARK_CONFIG: "", SPARK_TIER: "" };
    const inProcess = startingTier(
      { model: await testModelPath() },
      await loadConfig({ cwd: process.cwd(), env: { ...process.env, ...noConfig } }),
    );
    expect(inProcess).toBe("fast");
    await using serve = await startSparkServe(["--model", await testModelPath(), "--threads", "1"], noConfig);
    const socket = new WebSocket(`${serve.url.replace(/^http/, "ws").replace(/\/v1$/, "")}/v1/agent`);
    const hostModels = new Promise<unknown>((resolve, reject) => {
      socket.on("message", (data) => {
        const event = JSON.parse(String(data)) as { type?: string; models?: unknown };
        if (event.type === "models") resolve(event.models);
      });
      socket.once("error", reject);
    });
    try {
      expect(await hostModels).toEqual([inProcess]);
    } finally {
      socket.close();
    }
    const listed = (await (await fetch(`${serve.url}/models`)).json()) as { data: { id: string }[] };
    expect(listed.data.map((model) => model.id)).toEqual([inProcess]);
    await serve.stderrMatches(/^Model ready in/m);
    expect(serve.stderr()).toMatch(/^Model ready in [\d.]+ s: fast, /m);
  }, 60_000);

  test("--no-auth is refused off loopback, and together with a key", async () => {
    const open = spark(["serve", "--port", "0", "--no-auth", "--host", "0.0.0.0"]);
    expect(await open.exit).toBe(1);
    expect(open.stderr()).toMatch(/^spark: --no-auth is only for a loopback address, not --host 0\.0\.0\.0/m);
    const both = spark(["serve", "--port", "0", "--no-auth", "--api-key", "k"]);
    expect(await both.exit).toBe(1);
    expect(both.stderr()).toContain("--no-auth and an API key");
  });

  test("a missing model file is one clear error and exit code 1", async () => {
    const run = spark(["serve", "--model", "/nowhere/model.gguf", "--port", "0"]);
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toMatch(/^spark: .*\/nowhere\/model\.gguf/m);
    expect(run.stderr()).not.toMatch(/\n\s+at /); // no stack trace
  });

  test("offline, the default model fails with one error that says how to use a local GGUF", async () => {
    const cache = await mkdtemp(path.join(os.tmpdir(), "spark-cache-"));
    const run = spark(["serve", "--port", "0"], {
      SPARK_MODELS_DIR: cache,
      SPARK_HF_ENDPOINT: "http://127.0.0.1:9",
    });
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toContain("--model /path/to/file.gguf");
    expect(run.stderr().match(/^spark:/gm)).toHaveLength(1);
  });

  test("bad flags are refused with usage help", async () => {
    const run = spark(["serve", "--port", "http"]);
    expect(await run.exit).toBe(1);
    expect(run.stderr()).toContain("expected a whole number from 0 to 65535");
  });

  test("the scripted engine is no flag; a SPARK_TEST_ENGINE that is not its JSON object is one clear error", async () => {
    const flag = spark(["serve", "--engine", "scripted", "--port", "0"]);
    expect(await flag.exit).toBe(1);
    expect(flag.stderr()).toMatch(/argument 'scripted' is invalid/);
    const env = spark(["serve", "--port", "0", "--no-auth"], {
      SPARK_HOME: await stateHome(),
      SPARK_TEST_ENGINE: "scripted",
    });
    expect(await env.exit).toBe(1);
    expect(env.stderr()).toMatch(/^spark: SPARK_TEST_ENGINE is not a JSON object/m);
  });
});

describe("serveKeys", () => {
  test("the given keys, else one random key; none with --no-auth on loopback only", () => {
    expect(serveKeys({ apiKey: ["a"], auth: true, host: "0.0.0.0" }, { SPARK_API_KEY: "b" })).toEqual([
      "a",
      "b",
    ]);
    const [made] = serveKeys({ apiKey: [], auth: true, host: "127.0.0.1" }, {});
    expect(made).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(serveKeys({ apiKey: [], auth: true, host: "127.0.0.1" }, {})).not.toEqual([made]);
    expect(serveKeys({ apiKey: [], auth: false, host: "localhost" }, {})).toEqual([]);
    expect(() => serveKeys({ apiKey: [], auth: false, host: "192.168.1.5" }, {})).toThrow(
      "--no-auth is only for a loopback address",
    );
    expect(() => serveKeys({ apiKey: [], auth: false, host: "::1" }, { SPARK_API_KEY: "k" })).toThrow(
      "contradict",
    );
  });

  test("loopback hosts", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "LOCALHOST"])
      expect(isLoopbackHost(host)).toBe(true);
    for (const host of ["0.0.0.0", "::", "192.168.1.5", "127.0.0.1.evil.example", "example.com", ""])
      expect(isLoopbackHost(host)).toBe(false);
  });
});
