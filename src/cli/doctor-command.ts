import { stat } from "node:fs/promises";
import os from "node:os";
import type { Command } from "commander";
import { GgufFileType, getLlama, LlamaLogLevel, readGgufFileInfo } from "node-llama-cpp";
import {
  type AgentPromptSize,
  defaultAgentPrompt,
  formatAgentPromptSize,
  measureAgentPrompt,
} from "../bench/agent-prompt-size.js";
import { type BackendInfo, backendInfoOf, gpuBinaryInstalled } from "../engine/llama/backend-info.js";
import {
  type DetectedGpu,
  describeGpu,
  type GpuProbe,
  gpuEnableStep,
  gpuNotice,
  probeGpu,
} from "../engine/llama/gpu-probe.js";
import { physicalCoreCount } from "../engine/llama/internal/physical-cores.js";
import { defaultContextSize } from "../engine/llama/llama-engine.js";
import { findCachedModel } from "../models/model-cache.js";
import { DEFAULT_MODEL, parseModelSpec } from "../models/model-uri.js";
import { formatBytes } from "../terminal/progress-bar.js";
import { type Advice, adviseChanges, type DoctorFacts } from "./doctor-advice.js";
import { integer } from "./integer-option.js";

interface DoctorOptions {
  model?: string;
  threads?: number;
  ctxSize?: number;
  gpu: boolean;
  json?: boolean;
}

/** The model as `spark doctor` read it from its GGUF header (the weights are not loaded). */
export type DoctorModel =
  | {
      spec: string;
      path: string;
      bytes: number;
      architecture: string | null;
      quantization: string | null;
      parameters: number | null;
      trainedContext: number | null;
    }
  | { spec: string; path: string | null; error: string; fix: string };

/** What `spark doctor --json` prints. */
export interface DoctorReport {
  cpu: { model: string; physicalCores: number; logicalCpus: number; variant: string };
  backend: BackendInfo["backend"];
  build: BackendInfo["build"];
  threads: number;
  memory: { totalBytes: number; freeBytes: number };
  model: DoctorModel;
  /** Tokens per conversation Spark would use (`--ctx-size`, else the model's, at least 4096 and at most 32768). */
  context: number | null;
  /** The default agent prompt in the model's tokens; null without a model. */
  agentPrompt: AgentPromptSize | { error: string } | null;
  gpu: {
    detected: DetectedGpu[];
    cudaRuntime: boolean;
    vulkanLoader: boolean;
    notes: string[];
    /** The command that enables the GPU found, when decoding would run on the CPU. */
    enableCommand: string | null;
    /** The start line `spark serve` prints about it, or null. */
    notice: string | null;
  };
  /** Most helpful first. */
  recommendations: Advice[];
}

const DOCTOR_HELP = `
Reads the model's GGUF header and vocabulary (not its weights; the vocabulary counts the agent
prompt's tokens) and loads llama.cpp's backend without a model, so it answers in a few seconds. The
GPU probe runs nvidia-smi and vulkaninfo when installed, each for at most 2 s.

Examples:
  $ spark doctor                                   # the default model (from the cache)
  $ spark doctor --model ./qwen2.5-coder-1.5b-instruct-q8_0.gguf
  $ spark doctor --threads 8 --json                # what a serve with --threads 8 would get, as JSON
`;

export function registerDoctorCommand(program: Command): void {
  program
    .command("doctor")
    .description(
      "report the backend (cpu/cuda/vulkan/metal), CPU variant, threads, memory, model and context, " +
        "and the change that would help most",
    )
    .option(
      "-m, --model <path|uri>",
      "a local GGUF file or hf:owner/repo/file.gguf (default: the default model)",
    )
    .option("-t, --threads <n>", "CPU threads to check (default: physical cores)", integer(1, 1024))
    .option(
      "-c, --ctx-size <n>",
      "tokens per conversation (default: the model's, at least 4096 and at most 32768)",
      integer(256, 1 << 20),
    )
    .option("--no-gpu", "check the CPU backend, as spark serve --no-gpu runs")
    .option("--json", "print the report as JSON")
    .addHelpText("after", DOCTOR_HELP)
    .action(async (options: DoctorOptions) => {
      const report = await diagnose(options);
      process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : formatReport(report));
      // A model the person named and Spark cannot read fails the check (the default model not yet
      // downloaded is a state the report explains, not a failure).
      if (options.model !== undefined && "error" in report.model) process.exitCode = 1;
    });
}

/** Gathers the report: backend without a model, the GGUF header, the GPU probe, the advice. */
export async function diagnose(options: DoctorOptions): Promise<DoctorReport> {
  const physicalCores = physicalCoreCount();
  const threads = options.threads ?? physicalCores;
  const [backend, model, probe] = await Promise.all([
    loadedBackend(options.gpu, threads),
    readModel(options.model),
    probeGpu(),
  ]);
  const context =
    options.ctxSize ?? ("bytes" in model ? defaultContextSize(model.trainedContext ?? 0) : null);
  const memory = { totalBytes: os.totalmem(), freeBytes: os.freemem() };
  // After the backend check, which loads and disposes a backend of its own.
  const agentPrompt =
    "bytes" in model
      ? await measureAgentPrompt(model.path, defaultAgentPrompt(process.cwd())).catch((error: Error) => ({
          error: error.message.split("\n")[0]!,
        }))
      : null;
  const step = options.gpu && backend.backend === "cpu" ? gpuEnableStep(probe, process) : null;
  const facts: DoctorFacts = {
    backend: backend.backend,
    engineBuild: backend.build,
    physicalCores,
    threads,
    freeMemoryBytes: memory.freeBytes,
    model:
      "bytes" in model
        ? { bytes: model.bytes, parameters: model.parameters, quantization: model.quantization }
        : { missing: model.error, fix: model.fix },
    gpu: step
      ? { found: describeGpu(step.gpu), command: step.command, prerequisite: step.prerequisite }
      : null,
  };
  return {
    cpu: {
      model: os.cpus()[0]?.model.trim() ?? "unknown",
      physicalCores,
      logicalCpus: os.availableParallelism(),
      variant: backend.cpuVariant,
    },
    backend: backend.backend,
    build: backend.build,
    threads,
    memory,
    model,
    context,
    agentPrompt,
    gpu: gpuSection(probe, backend, options.gpu, step?.command ?? null),
    recommendations: adviseChanges(facts),
  };
}

function gpuSection(probe: GpuProbe, backend: BackendInfo, gpu: boolean, enableCommand: string | null) {
  const notice = gpuNotice({
    probe,
    backend: backend.backend,
    gpuDisabled: !gpu,
    arch: process.arch,
    binaryInstalled: (kind) => gpuBinaryInstalled(kind),
  });
  return {
    detected: probe.gpus,
    cudaRuntime: probe.cudaRuntime,
    vulkanLoader: probe.vulkanLoader,
    notes: probe.notes,
    enableCommand,
    notice,
  };
}

/** llama.cpp's backend as `spark serve` would load it, without a model. */
async function loadedBackend(gpu: boolean, threads: number): Promise<BackendInfo> {
  const llama = await getLlama({
    gpu: gpu ? "auto" : false,
    build: "never",
    logLevel: LlamaLogLevel.error,
    maxThreads: threads,
  });
  try {
    return backendInfoOf(llama);
  } finally {
    await llama.dispose();
  }
}

/** The model's file and GGUF header; never downloads (a missing model says how to get it). */
export async function readModel(spec: string | undefined): Promise<DoctorModel> {
  const given = spec === undefined || spec.trim() === "" ? DEFAULT_MODEL : spec;
  let path: string | null = null;
  try {
    const ref = parseModelSpec(given);
    if (ref.kind === "local") path = ref.path;
    else {
      const cached = await findCachedModel(ref);
      if (cached === null) {
        return {
          spec: given,
          path: null,
          error: `${ref.uri} is not in the cache`,
          fix: `run: spark models pull ${ref.uri}`,
        };
      }
      path = cached.path;
    }
    const { size } = await stat(path);
    const info = await readGgufFileInfo(path, { readTensorInfo: true, logWarnings: false });
    const fileType = info.metadata.general?.file_type;
    const quantization =
      fileType === undefined ? null : (GgufFileType[fileType]?.replace(/^MOSTLY_/, "") ?? null);
    const tensors = info.fullTensorInfo ?? info.tensorInfo ?? [];
    const parameters = tensors.reduce(
      (sum, tensor) => sum + tensor.dimensions.reduce<number>((product, d) => product * Number(d), 1),
      0,
    );
    const trained = (info.architectureMetadata as { context_length?: number } | undefined)?.context_length;
    return {
      spec: given,
      path,
      bytes: size,
      architecture: info.metadata.general?.architecture ?? null,
      quantization,
      parameters: parameters > 0 ? parameters : null,
      trainedContext: typeof trained === "number" ? trained : null,
    };
  } catch (error) {
    return {
      spec: given,
      path,
      // The first line: parseModelSpec's own advice names `spark serve`, the fix below names --model.
      error: `cannot read ${path ?? given}: ${(error as Error).message.split("\n")[0]}`,
      fix: "check --model: a GGUF file or hf:owner/repo/file.gguf",
    };
  }
}

function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  return `${(n / 1e3).toFixed(1)}K`;
}

/** The report for a person: one fact per line, then the most helpful change. */
export function formatReport(report: DoctorReport): string {
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
  const { model } = report;
  const modelLines =
    "bytes" in model
      ? [
          model.path,
          [
            formatBytes(model.bytes),
            model.quantization,
            model.parameters === null ? null : `${formatCount(model.parameters)} parameters`,
            model.architecture,
          ]
            .filter((part) => part !== null)
            .join(", "),
        ]
      : [`${model.spec}: ${model.error}`];
  const gpus =
    report.gpu.detected.length === 0
      ? ["none found"]
      : report.gpu.detected.map((gpu) => `${gpu.backend}: ${describeGpu(gpu)} (${gpu.evidence.join(", ")})`);
  const [first, ...rest] = report.recommendations;
  const lines = [
    `CPU        ${report.cpu.model}, ${report.cpu.physicalCores} physical cores (${report.cpu.logicalCpus} logical CPUs)`,
    `Backend    ${report.backend}, CPU variant ${report.cpu.variant} (${report.build} engine binary)`,
    `Threads    ${report.threads}${report.threads === report.cpu.physicalCores ? " (the physical cores)" : ""}`,
    `Memory     ${gib(report.memory.totalBytes)} total, ${gib(report.memory.freeBytes)} free`,
    `Model      ${modelLines[0]}`,
    ...modelLines.slice(1).map((line) => `           ${line}`),
    `Context    ${report.context === null ? "unknown" : `${report.context} tokens`}${"trainedContext" in model && model.trainedContext !== null ? ` (trained: ${model.trainedContext})` : ""}`,
    ...(report.agentPrompt === null
      ? []
      : [
          `Prompt     ${"error" in report.agentPrompt ? `agent prompt: not measured (${report.agentPrompt.error})` : formatAgentPromptSize(report.agentPrompt)}`,
        ]),
    `GPU        ${gpus[0]}`,
    ...gpus.slice(1).map((line) => `           ${line}`),
    ...report.gpu.notes.map((note) => `           note: ${note}`),
    "",
    `Most helpful change: ${first!.change}`,
    `  why: ${first!.reason}`,
    ...rest.map((advice) => `Also: ${advice.change} (${advice.reason})`),
  ];
  return `${lines.join("\n")}\n`;
}
