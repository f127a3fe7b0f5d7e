import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { describe, expect, test } from "vitest";

const bin = fileURLToPath(new URL("../../bin/spark.js", import.meta.url));

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

describe("spark serve (the real binary)", () => {
  test("serves the scripted engine until Ctrl+C, then exits cleanly", async () => {
    const run = spark(["serve", "--engine", "scripted", "--port", "0"]);
    const [, url] = await waitFor(run.stderr, /HTTP\s+(http:\/\/\S+)\/v1/, run.exit);
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
    const response = await client.responses.create({ model: "scripted", input: "ping" });
    expect(response.output_text).toBe("You said: ping");
    run.child.kill("SIGINT");
    expect(await run.exit).toBe(0);
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
});
