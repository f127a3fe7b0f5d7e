import { afterAll, beforeAll, expect, test } from "vitest";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { testModelPath } from "../engine/test-support/test-model.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";
import type { BenchContext } from "./bench-context.js";
import { markdownTable } from "./bench-report.js";
import { agentStartScenario } from "./scenarios/agent-start.js";
import { decodeScenario } from "./scenarios/decode.js";
import { steerScenario } from "./scenarios/steer.js";
import { ttftScenario } from "./scenarios/ttft.js";

// Speed is not asserted here (that is what `spark bench` reports); these check that each scenario
// runs end to end and reports a well-formed comparison.
let engine: LlamaEngine;
let server: SparkServer;
let ctx: BenchContext;
beforeAll(async () => {
  // The agent's system prompt and tools take about 4,000 tokens of the tiny model's byte-level vocabulary.
  engine = await LlamaEngine.create({ modelPath: await testModelPath(), contextSize: 16384 });
  const models = new ModelRegistry();
  models.add(engine.info.id, engine);
  server = await SparkServer.start({ models });
  ctx = {
    engine,
    wsUrl: `${server.url.replace(/^http/, "ws")}/v1/responses`,
    baseUrl: `${server.url}/v1`,
    quick: true,
    historyTokens: 300,
    log: () => {},
  };
});
afterAll(async () => {
  await server.close();
  await engine.dispose();
});

test.each([
  ["ttft", ttftScenario],
  ["decode", decodeScenario],
  ["steer", steerScenario],
  ["agent-start", agentStartScenario],
] as const)("the %s scenario measures Spark against its baseline", async (name, scenario) => {
  const rows = await scenario(ctx);
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) {
    expect(row.scenario).toBe(name);
    expect(row.value).toBeGreaterThan(0);
    expect(row.baseline).toBeGreaterThan(0);
    expect(row.ratio).toBeCloseTo(row.value / row.baseline, 10);
    expect(typeof row.holds).toBe("boolean");
  }
  expect(markdownTable(rows)).toContain(`| ${name} |`);
});
