import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { type Command, Option } from "commander";
import { physicalCoreCount } from "../engine/llama/internal/physical-cores.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import {
  ensureSyntheticModel,
  type SyntheticQuant,
  type SyntheticShapeName,
} from "../engine/synthetic/synthetic-model.js";
import { ModelRegistry } from "../server/model-registry.js";
import { SparkServer } from "../server/spark-server.js";
import { StatusLine } from "../terminal/status-line.js";
import { type BatchModel, type BenchContext, benchSizes } from "./bench-context.js";
import { type BenchRow, detailLines, markdownTable } from "./bench-report.js";
import { findLlamaServer, type LlamaServerLookup } from "./internal/llama-server-binary.js";
import { smollm2ModelPath, trainedModelPath } from "./internal/repo-paths.js";
import { type AgentModel, agentScenario } from "./scenarios/agent.js";
import { agentPromptScenario } from "./scenarios/agent-prompt.js";
import { agentStartScenario } from "./scenarios/agent-start.js";
import { batchScenario } from "./scenarios/batch.js";
import { decodeScenario } from "./scenarios/decode.js";
import { firstAnswerScenario } from "./scenarios/first-answer.js";
import { forkScenario } from "./scenarios/fork.js";
import { loadScenario } from "./scenarios/load.js";
import { memoryScenario } from "./scenarios/memory.js";
import { peerScenario } from "./scenarios/peer.js";
import { perTokenScenario } from "./scenarios/per-token.js";
import { type PrefillModel, prefillScenario } from "./scenarios/prefill.js";
import { routingScenario } from "./scenarios/routing.js";
import { rttScenario } from "./scenarios/rtt.js";
import { specScenario } from "./scenarios/spec.js";
import { steerScenario } from "./scenarios/steer.js";
import { ttftScenario } from "./scenarios/ttft.js";
import { tuiScenario } from "./scenarios/tui.js";
import { typeAheadScenario } from "./scenarios/type-ahead.js";

const SCENARIOS = {
  rtt: rttScenario,
  ttft: ttftScenario,
  fork: forkScenario,
  "per-token": perTokenScenario,
  decode: decodeScenario,
  spec: specScenario,
  steer: steerScenario,
  batch: batchScenario,
  "agent-start": agentStartScenario,
  "agent-prompt": agentPromptScenario,
  load: loadScenario,
  "type-ahead": typeAheadScenario,
} as const;
type ScenarioName = keyof typeof SCENARIOS;

/** Scenarios with servers and models of their own: run only when named. */
type NamedOnly = "peer" | "agent" | "tui" | "routing" | "first-answer" | "prefill" | "memory";
const NAMED_ONLY: readonly NamedOnly[] = [
  "peer",
  "agent",
  "tui",
  "routing",
  "first-answer",
  "prefill",
  "memory",
];

interface BenchOptions {
  quick: boolean;
  scenario: (ScenarioName | NamedOnly)[];
  peerBin?: string;
  realModel?: string;
  model: "smollm2-135m" | "qwen2.5-0.5b";
  quant: SyntheticQuant;
  modelsDir: string;
  out?: string;
}

export function registerBenchCommand(program: Command): void {
  program
    .command("bench")
    .description("measure Spark's speed claims, each against its baseline in the same run (ratios)")
    .option("--quick", "fewer repetitions (a few minutes on a 2-core CPU)", false)
    .addOption(
      new Option(
        "--scenario <name...>",
        "scenarios to run (peer, agent, tui, routing, first-answer, prefill and memory only when named)",
      )
        .choices([...Object.keys(SCENARIOS), ...NAMED_ONLY])
        .default(Object.keys(SCENARIOS)),
    )
    .option(
      "--peer-bin <path>",
      "peer, agent: the llama-server binary to compare with (default: the one npm run build:llama-server built)",
    )
    .option(
      "--real-model <gguf>",
      "agent: a trained model for its real-model rows (default: SmolLM2-135M-Instruct where npm run fetch:smollm2 puts it)",
    )
    .addOption(
      new Option("--model <shape>", "synthetic model shape")
        .choices(["smollm2-135m", "qwen2.5-0.5b"])
        .default("smollm2-135m"),
    )
    .addOption(new Option("--quant <type>", "weight type").choices(["Q8_0", "Q4_0", "F16"]).default("Q8_0"))
    .option(
      "--models-dir <dir>",
      "where synthetic models are built",
      path.join(os.homedir(), ".cache", "spark", "bench-models"),
    )
    .option("--out <file>", "JSON results file (default: bench-results/bench-<time>.json)")
    .addHelpText(
      "after",
      "\nModels are synthetic (random weights, real shapes), built once; nothing is downloaded (agent adds\nthe trained SmolLM2-135M-Instruct once npm run fetch:smollm2 has fetched it).\nResults are ratios: absolute numbers vary from machine to machine.\n",
    )
    .action(async (options: BenchOptions) => {
      await bench(options);
    });
}

async function bench(options: BenchOptions): Promise<void> {
  const peer = options.scenario.includes("peer");
  const routing = options.scenario.includes("routing");
  const llamaServer = findLlamaServer(options.peerBin);
  const needsPeer = options.scenario.find((name) => ["peer", "routing", "prefill", "memory"].includes(name));
  if (needsPeer && "missing" in llamaServer) {
    process.stderr.write(`spark bench: --scenario ${needsPeer} needs llama-server: ${llamaServer.missing}\n`);
    process.exitCode = 2;
    return;
  }
  if (options.realModel !== undefined && !existsSync(options.realModel)) {
    process.stderr.write(`spark bench: --real-model ${options.realModel}: no such file\n`);
    process.exitCode = 2;
    return;
  }
  const scenarios = options.scenario.filter(
    (name): name is ScenarioName => !NAMED_ONLY.includes(name as NamedOnly),
  );
  // Another busy process turns llama.cpp's spinning threads into a 10x slowdown: say so.
  const loadBefore = os.loadavg()[0]!;
  if (loadBefore > os.availableParallelism() / 2)
    process.stderr.write(
      `Warning: the machine is busy (load average ${loadBefore.toFixed(1)}); results will be noisy.\n`,
    );
  const rows: BenchRow[] = [];
  const benchStarted = performance.now();
  const log = (line: string) => process.stderr.write(`  ${line}\n`);
  if (peer && "binary" in llamaServer) {
    process.stderr.write("Scenario peer\n");
    rows.push(
      ...(await peerScenario({
        peerBin: llamaServer.binary,
        modelsDir: options.modelsDir,
        quant: options.quant,
        quick: options.quick,
        log,
      })),
    );
  }
  if (options.scenario.includes("agent")) {
    process.stderr.write("Scenario agent\n");
    rows.push(
      ...(await agentScenario({
        models: await agentModels(options, log),
        llamaServer,
        fileLines: 150,
        runs: options.quick ? 1 : 3,
        contextSize: 8192,
        log,
      })),
    );
  }
  if (options.scenario.includes("tui")) {
    process.stderr.write("Scenario tui\n");
    const modelPath = await ensureSyntheticModel(options.modelsDir, "smollm2-135m", options.quant);
    rows.push(...(await tuiScenario({ modelPath, quick: options.quick, log })));
  }
  if (options.scenario.includes("first-answer")) {
    process.stderr.write("Scenario first-answer\n");
    rows.push(
      ...(await firstAnswerScenario({
        models: await firstAnswerModels(options, log),
        llamaServer,
        contextSize: 4096,
        runs: options.quick ? 1 : 2,
        log,
      })),
    );
  }
  if (routing && "binary" in llamaServer) {
    process.stderr.write("Scenario routing\n");
    rows.push(
      ...(await routingScenario({
        llamaServer: llamaServer.binary,
        modelPath: await ensureSyntheticModel(options.modelsDir, "smollm2-135m", options.quant),
        conversations: options.quick ? 4 : 8,
        systemSentences: options.quick ? 60 : 150,
        log,
      })),
    );
  }
  if (options.scenario.includes("prefill") && "binary" in llamaServer) {
    process.stderr.write("Scenario prefill\n");
    rows.push(
      ...(await prefillScenario({
        peerBin: llamaServer.binary,
        models: await prefillModels(options, log),
        threads: physicalCoreCount(),
        promptTokens: 2000,
        runs: options.quick ? 2 : 5,
        log,
      })),
    );
  }
  if (options.scenario.includes("memory") && "binary" in llamaServer) {
    process.stderr.write("Scenario memory\n");
    log(`memory: building synthetic qwen2.5-1.5b ${options.quant}`);
    rows.push(
      ...(await memoryScenario({
        peerBin: llamaServer.binary,
        modelPath: await ensureSyntheticModel(options.modelsDir, "qwen2.5-1.5b", options.quant),
        label: "1.5B shape",
        // 4,096 tokens, and the model's trained context (Spark's default for each conversation).
        contextSizes: [4096, 32768],
        threads: physicalCoreCount(),
        log,
      })),
    );
  }
  if (scenarios.length > 0) rows.push(...(await benchScenarios(options, scenarios, llamaServer)));
  process.stderr.write(`All scenarios: ${((performance.now() - benchStarted) / 1000).toFixed(0)} s\n`);
  process.stdout.write(`${markdownTable(rows)}\n\n${detailLines(rows)}\n`);
  const out =
    options.out ?? path.join("bench-results", `bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
  await mkdir(path.dirname(out), { recursive: true });
  const machine = {
    cpus: os.cpus()[0]?.model,
    cores: os.availableParallelism(),
    node: process.version,
    loadAverage: { before: loadBefore, after: os.loadavg()[0] },
  };
  await writeFile(
    out,
    `${JSON.stringify({ model: options.model, quick: options.quick, machine, rows }, null, 2)}\n`,
  );
  process.stderr.write(`Results: ${out}\n`);
}

/** The scenarios that share one engine on `--model`, served in this process. */
async function benchScenarios(
  options: BenchOptions,
  scenarios: ScenarioName[],
  llamaServer: LlamaServerLookup,
): Promise<BenchRow[]> {
  const building = new StatusLine(`Building synthetic ${options.model} ${options.quant}`);
  const modelPath = await ensureSyntheticModel(options.modelsDir, options.model, options.quant, {
    onProgress: (f) => building.update(f),
  });
  building.done(`Model: ${modelPath}`);
  await using engine = await LlamaEngine.create({ modelPath, contextSize: 4096 });
  const models = new ModelRegistry();
  models.add(engine.info.id, engine);
  await using server = await SparkServer.start({ models });
  const trained = trainedModelPath();
  const chat = smollm2ModelPath();
  const ctx: BenchContext = {
    engine,
    modelPath,
    wsUrl: `${server.url.replace(/^http/, "ws")}/v1/responses`,
    baseUrl: `${server.url}/v1`,
    quick: options.quick,
    historyTokens: 2000,
    sizes: benchSizes(options.quick),
    batchModels: scenarios.includes("batch") ? await batchModels(options) : [],
    llamaServer,
    ...(trained ? { trainedModelPath: trained } : {}),
    ...(chat ? { chatModelPath: chat } : {}),
    log: (line) => process.stderr.write(`  ${line}\n`),
  };
  process.stderr.write(
    `Engine: ${engine.info.id}, ${engine.threads} threads, ${engine.binary.build} binary${engine.binary.nativeLoop ? " (native decode loop)" : ""}\n`,
  );
  const rows: BenchRow[] = [];
  for (const name of scenarios) {
    process.stderr.write(`Scenario ${name}\n`);
    const started = performance.now();
    rows.push(...(await SCENARIOS[name](ctx)));
    process.stderr.write(`  (${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
  }
  return rows;
}

/** The batch scenario's models: the synthetic SmolLM2-135M and Qwen2.5-1.5B shapes. */
async function batchModels(options: BenchOptions): Promise<BatchModel[]> {
  const models: BatchModel[] = [];
  for (const [shape, label, tokens, quickTokens] of [
    ["smollm2-135m", "135M shape", 128, 48],
    ["qwen2.5-1.5b", "1.5B shape", 32, 12],
  ] as const) {
    const path = await ensureSyntheticModel(options.modelsDir, shape, options.quant);
    models.push({ label, path, outputTokens: options.quick ? quickTokens : tokens });
  }
  return models;
}

/**
 * The agent scenario's models: the synthetic SmolLM2-135M and Qwen2.5-1.5B shapes, then the trained
 * `--real-model` (SmolLM2-135M-Instruct by default), left out with a line saying how to fetch it.
 */
async function agentModels(options: BenchOptions, log: (line: string) => void): Promise<AgentModel[]> {
  const tokens = (full: number, quick: number) => (options.quick ? quick : full);
  const models: AgentModel[] = [];
  for (const [shape, label, answerTokens, editTokens] of [
    ["smollm2-135m", "135M shape", tokens(128, 32), tokens(400, 96)],
    ["qwen2.5-1.5b", "1.5B shape", tokens(48, 16), tokens(128, 32)],
  ] as const) {
    log(`agent: building synthetic ${shape} ${options.quant}`);
    const modelPath = await ensureSyntheticModel(options.modelsDir, shape, options.quant);
    models.push({ label, path: modelPath, randomWeights: true, answerTokens, editTokens });
  }
  const real = options.realModel ?? smollm2ModelPath();
  if (real === undefined) {
    log(
      "agent: SmolLM2 rows left out: no SmolLM2-135M-Instruct GGUF; npm run fetch:smollm2 fetches it (or pass --real-model)",
    );
  } else {
    const label = options.realModel ? path.basename(real, ".gguf") : "SmolLM2-135M-Instruct Q4_1";
    models.push({
      label,
      path: real,
      randomWeights: false,
      answerTokens: tokens(128, 32),
      editTokens: tokens(400, 96),
    });
  }
  return models;
}

/** The 135M shape (and, unless quick, the 1.5B shape), and SmolLM2-135M-Instruct where it is. */
/** The prefill scenario's models: stories260K, the 135M and 1.5B shapes, and SmolLM2 where fetched. */
async function prefillModels(options: BenchOptions, log: (line: string) => void): Promise<PrefillModel[]> {
  const models: PrefillModel[] = [];
  const stories = trainedModelPath();
  if (stories !== undefined) models.push({ label: "stories260K", path: stories, contextSize: 2048 });
  for (const [shape, label] of [
    ["smollm2-135m", "135M shape"],
    ["qwen2.5-1.5b", "1.5B shape"],
  ] as [SyntheticShapeName, string][]) {
    log(`prefill: building synthetic ${shape} ${options.quant}`);
    models.push({
      label,
      path: await ensureSyntheticModel(options.modelsDir, shape, options.quant),
      contextSize: 4096,
    });
  }
  const real = options.realModel ?? smollm2ModelPath();
  if (real !== undefined) models.push({ label: path.basename(real, ".gguf"), path: real, contextSize: 4096 });
  return models;
}

async function firstAnswerModels(
  options: BenchOptions,
  log: (line: string) => void,
): Promise<{ label: string; path: string }[]> {
  const shapes = [["smollm2-135m", "135M shape"]] as [SyntheticShapeName, string][];
  if (!options.quick) shapes.push(["qwen2.5-1.5b", "1.5B shape"]);
  const models = [];
  for (const [shape, label] of shapes) {
    log(`first-answer: building synthetic ${shape} ${options.quant}`);
    models.push({ label, path: await ensureSyntheticModel(options.modelsDir, shape, options.quant) });
  }
  const real = options.realModel ?? smollm2ModelPath();
  if (real !== undefined) models.push({ label: path.basename(real, ".gguf"), path: real });
  return models;
}
