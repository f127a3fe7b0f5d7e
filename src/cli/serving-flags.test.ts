import { spawn } from "node:child_process";
import OpenAI from "openai";
import { describe, expect, test } from "vitest";
import { startSparkServe } from "../engine/upstream/test-support/spark-serve-process.js";
import { sparkBin as bin } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

describe("spark serve: upstream engine, admission and metrics flags (the real binary)", () => {
  test("fronts another spark serve as its upstream, with limits, public metrics and JSON logs", async () => {
    await using upstream = await startSparkServe([], testEngineEnv());
    await using front = await startSparkServe([
      "--engine",
      "upstream",
      "--upstream",
      upstream.url,
      "--upstream-model",
      "scripted",
      "--max-concurrent",
      "2",
      "--max-queue",
      "8",
      "--queue-timeout-ms",
      "5000",
      "--rate-limit-rpm",
      "100",
      "--metrics-public",
      "--log",
      "json",
    ]);
    expect(front.stderr()).toMatch(/serving scripted \(upstream, 32768 tokens of context\)/);
    const client = new OpenAI({ baseURL: front.url, apiKey: "unused", maxRetries: 0 });
    const response = await client.responses.create({ model: "scripted", input: "ping" });
    expect(response.output_text).toBe("You said: ping");

    const metrics = await (await fetch(`${front.url.replace(/\/v1$/, "")}/metrics`)).text();
    // Ours, and the agent prompt's evaluation the front's runtime starts at load (done or not yet).
    expect(metrics).toMatch(/^spark_requests_total\{model="scripted",tier="default",outcome="stop"\} [12]$/m);
    await front.stderrMatches(/"path":"\/v1\/responses"/);
    const logged = front
      .stderr()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toContainEqual(
      expect.objectContaining({ path: "/v1/responses", status: 200, model: "scripted", output_tokens: 3 }),
    );
  }, 30_000);

  test("--engine upstream without --upstream is one clear error", async () => {
    const child = spawn(process.execPath, [bin, "serve", "--engine", "upstream", "--port", "0"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toMatch(/^spark: --engine upstream needs at least one --upstream <url>\./m);
  });
});
