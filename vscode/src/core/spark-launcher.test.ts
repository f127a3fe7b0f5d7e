import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { sparkBin } from "../../../src/cli/test-support/spark-binary.js";
import { testEngineEnv } from "../../../src/cli/test-support/test-engine.js";
import {
  agentSocketUrl,
  isLoopback,
  launchSpark,
  localServerKey,
  normalizeServerUrl,
  probeServer,
  resolveSparkCommand,
} from "./spark-launcher.js";

const repo = fileURLToPath(new URL("../../..", import.meta.url));

async function workspace(): Promise<{ cwd: string; env: NodeJS.ProcessEnv }> {
  const cwd = await mkdtemp(path.join(os.tmpdir(), "spark-vscode-launch-"));
  return { cwd, env: { ...process.env, SPARK_HOME: path.join(cwd, ".spark-home") } };
}

describe("finding spark", () => {
  test("a Spark checkout, a .js entry point, an executable, then PATH; else what to do", async () => {
    const { cwd } = await workspace();
    const fromCheckout = resolveSparkCommand({ sparkPath: repo, cwd, env: process.env });
    expect(fromCheckout).toMatchObject({ args: [path.join(repo, "bin", "spark.js")], source: "setting" });
    expect(path.basename(fromCheckout.command)).toMatch(/^node/);
    const fromEntry = resolveSparkCommand({
      sparkPath: path.join(repo, "bin/spark.js"),
      cwd,
      env: process.env,
    });
    expect(fromEntry.args).toEqual([path.join(repo, "bin", "spark.js")]);
    // Without node on PATH, VS Code's own binary runs the script as Node.
    const noNode = resolveSparkCommand({
      sparkPath: repo,
      cwd,
      env: { PATH: "" },
      fallbackNode: "/vscode/code",
    });
    expect(noNode).toMatchObject({ command: "/vscode/code", env: { ELECTRON_RUN_AS_NODE: "1" } });

    const bin = path.join(cwd, "bin");
    await writeFile(path.join(cwd, "spark"), "#!/bin/sh\n", { mode: 0o755 });
    expect(resolveSparkCommand({ cwd: bin, env: { PATH: cwd } })).toMatchObject({
      command: path.join(cwd, "spark"),
      args: [],
      source: "path",
    });
    // The workspace is the Spark repository itself: its bin/spark.js runs once the workspace is trusted.
    expect(resolveSparkCommand({ cwd: repo, env: { PATH: "" }, trustedWorkspace: true })).toMatchObject({
      source: "workspace",
    });
    expect(() => resolveSparkCommand({ cwd: repo, env: { PATH: "" } })).toThrow(
      /bin\/spark\.js runs only once you trust the workspace/,
    );

    expect(() => resolveSparkCommand({ cwd, env: { PATH: "" } })).toThrow(
      /no `spark` on PATH.*spark\.sparkPath/,
    );
    expect(() => resolveSparkCommand({ sparkPath: "nowhere/spark", cwd, env: {} })).toThrow(/does not exist/);
    expect(() => resolveSparkCommand({ sparkPath: cwd, cwd, env: {} })).toThrow(/not a Spark checkout/);
  });

  test("server addresses", () => {
    expect(normalizeServerUrl(" http://127.0.0.1:8080/v1/ ")).toBe("http://127.0.0.1:8080");
    expect(agentSocketUrl("http://127.0.0.1:8080")).toBe("ws://127.0.0.1:8080/v1/agent");
    expect(agentSocketUrl("https://box:9000/")).toBe("wss://box:9000/v1/agent");
    expect(isLoopback("http://localhost:1")).toBe(true);
    expect(isLoopback("http://127.0.0.2:1")).toBe(true);
    expect(isLoopback("http://[::1]:1")).toBe(true);
    expect(isLoopback("http://gpu-box:1")).toBe(false);
  });
});

describe("starting the real spark serve (built by npm test first)", () => {
  test("starts on a free port, checks the key, and stops", async () => {
    const { cwd, env } = await workspace();
    const lines: string[] = [];
    const spark = await launchSpark({
      command: resolveSparkCommand({ sparkPath: sparkBin, cwd, env }),
      cwd,
      env: { ...env, ...testEngineEnv() },
      apiKey: "sekret",
      onOutput: (line) => lines.push(line),
    });
    try {
      expect(spark.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(lines.join("\n")).toContain("Agent ");
      expect(await probeServer(spark.baseUrl, { apiKey: "sekret" })).toEqual({
        ok: true,
        models: ["scripted"],
      });
      const refused = await probeServer(spark.baseUrl);
      expect(refused).toMatchObject({ ok: false, error: { code: "unauthorized" } });
      const wrong = await probeServer(spark.baseUrl, { apiKey: "nope" });
      expect(wrong).toMatchObject({
        ok: false,
        error: { code: "unauthorized", message: expect.stringContaining("refused") },
      });
    } finally {
      await spark.dispose();
    }
    expect(await spark.exited).toBe(0);
    expect(await probeServer(spark.baseUrl, { timeoutMs: 1000 })).toMatchObject({
      ok: false,
      error: { code: "unreachable" },
    });
  });

  test("without a key of ours, the server makes one, and local clients find it in its state file", async () => {
    const { cwd, env } = await workspace();
    const spark = await launchSpark({
      command: resolveSparkCommand({ sparkPath: sparkBin, cwd, env }),
      cwd,
      env: { ...env, SPARK_API_KEY: "", ...testEngineEnv() },
    });
    try {
      expect(await probeServer(spark.baseUrl)).toMatchObject({ ok: false, error: { code: "unauthorized" } });
      const key = await localServerKey(spark.baseUrl, { env });
      expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(await probeServer(spark.baseUrl, { apiKey: key! })).toEqual({ ok: true, models: ["scripted"] });
      // Another user's state (another SPARK_HOME) and other machines know no key.
      expect(await localServerKey(spark.baseUrl, { env: { SPARK_HOME: cwd } })).toBeNull();
      expect(await localServerKey(spark.baseUrl.replace("127.0.0.1", "gpu-box"), { env })).toBeNull();
    } finally {
      await spark.dispose();
    }
    expect(await spark.exited).toBe(0);
    expect(await localServerKey(spark.baseUrl, { env })).toBeNull();
  });

  test("a server that cannot start says why", async () => {
    const { cwd, env } = await workspace();
    const failing = launchSpark({
      command: resolveSparkCommand({ sparkPath: repo, cwd, env }),
      cwd,
      env,
      extraArgs: ["--model", "/nowhere/model.gguf"],
    });
    await expect(failing).rejects.toMatchObject({
      code: "exited",
      message: expect.stringMatching(/exited \(code 1\) before listening:\n.*\/nowhere\/model\.gguf/),
    });
  });

  test("a cancelled start rejects, and stops the process it began", async () => {
    const { cwd, env } = await workspace();
    const options = {
      command: resolveSparkCommand({ sparkPath: sparkBin, cwd, env }),
      cwd,
      env: { ...env, ...testEngineEnv() },
    };
    await expect(launchSpark({ ...options, signal: AbortSignal.abort() })).rejects.toMatchObject({
      code: "aborted",
    });
    const controller = new AbortController();
    const starting = launchSpark({ ...options, signal: controller.signal });
    controller.abort();
    await expect(starting).rejects.toMatchObject({ code: "aborted" });
  });
});
