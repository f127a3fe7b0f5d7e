import { stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { testModelPath } from "../engine/test-support/test-model.js";
import { runSpark } from "./test-support/spark-binary.js";

/** Runs the real `spark` binary (built by `npm test` first) to its end. */
const spark = (args: string[]) => runSpark(args, process.cwd());

describe("spark doctor (the real binary)", () => {
  test("--json reports backend, CPU, threads, memory, the model's GGUF header, context, GPU and advice", async () => {
    const model = await testModelPath();
    const run = await spark(["doctor", "--json", "--model", model]);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({
      cpu: {
        model: expect.any(String),
        physicalCores: expect.any(Number),
        logicalCpus: os.availableParallelism(),
        variant: expect.stringMatching(/^[a-z0-9_]+$/),
      },
      backend: expect.stringMatching(/^(cpu|cuda|vulkan|metal)$/),
      build: expect.stringMatching(/^(local|prebuilt)$/),
      memory: { totalBytes: os.totalmem(), freeBytes: expect.any(Number) },
      model: {
        path: model,
        bytes: (await stat(model)).size,
        architecture: "llama",
        quantization: "Q8_0",
        parameters: expect.any(Number),
        trainedContext: expect.any(Number),
      },
      gpu: { detected: expect.any(Array), notes: expect.any(Array) },
    });
    expect(report.agentPrompt).toEqual({
      model: path.basename(model),
      total: expect.any(Number),
      system: expect.any(Number),
      tools: expect.any(Number),
    });
    expect(report.agentPrompt.system + report.agentPrompt.tools).toBe(report.agentPrompt.total);
    expect(report.threads).toBe(report.cpu.physicalCores);
    expect(report.context).toBe(Math.min(Math.max(report.model.trainedContext, 4096), 32768));
    expect(report.model.parameters).toBeGreaterThan(0);
    expect(report.recommendations.length).toBeGreaterThan(0);
    for (const advice of report.recommendations) {
      expect(advice).toEqual({
        id: expect.any(String),
        change: expect.any(String),
        reason: expect.any(String),
      });
    }
  }, 30_000);

  test("threads above the physical cores are the most helpful change; the text report says so", async () => {
    const model = await testModelPath();
    const run = await spark(["doctor", "--model", model, "--threads", "1024", "--ctx-size", "2048"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /^Backend {4}(cpu|cuda|vulkan|metal), CPU variant \w+ \((local|prebuilt) engine binary\)$/m,
    );
    expect(run.stdout).toMatch(/^Threads {4}1024$/m);
    expect(run.stdout).toMatch(/^Context {4}2048 tokens/m);
    const prompt = run.stdout.split("\n").find((line) => line.startsWith("Prompt "));
    expect(prompt).toMatch(/^Prompt {5}agent prompt: [\d,]+ tokens \(system [\d,]+, tools [\d,]+\) on /);
    expect(prompt?.endsWith(` on ${path.basename(model)}`)).toBe(true);
    expect(run.stdout).toMatch(
      /^Most helpful change: drop --threads \(the default is the \d+ physical cores\)$/m,
    );
  }, 30_000);

  test("a missing model is reported with how to fix it, not a crash, and fails the check (exit 1)", async () => {
    const run = await spark(["doctor", "--json", "--model", "/nowhere/model.gguf"]);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.model).toEqual({
      spec: "/nowhere/model.gguf",
      path: null,
      error: "cannot read /nowhere/model.gguf: Model file not found: /nowhere/model.gguf.",
      fix: "check --model: a GGUF file or hf:owner/repo/file.gguf",
    });
    expect(report.context).toBeNull();
    expect(report.agentPrompt).toBeNull();
    expect(report.recommendations[0].id).toBe("model_missing");
  }, 30_000);

  test("bad flags are refused with usage help", async () => {
    const run = await spark(["doctor", "--threads", "0"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("expected a whole number from 1 to 1024");
  });
});
