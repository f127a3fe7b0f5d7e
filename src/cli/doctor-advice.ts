import { formatBytes } from "../terminal/progress-bar.js";

/** What `spark doctor` measured, as far as its advice needs. */
export interface DoctorFacts {
  /** `cpu`, `cuda`, `vulkan` or `metal`. */
  backend: string;
  physicalCores: number;
  threads: number;
  freeMemoryBytes: number;
  /** The model file, or why it could not be read. */
  model:
    | { bytes: number; parameters: number | null; quantization: string | null }
    | { missing: string; fix: string };
  /** Which engine binary runs: node-llama-cpp's prebuilt one, or Spark's local build. */
  engineBuild: "local" | "prebuilt";
  /** The step that enables a GPU found beside a CPU backend (see gpuEnableStep). */
  gpu: { found: string; command: string; prerequisite: string | null } | null;
}

export type AdviceId =
  | "model_missing"
  | "threads_above_cores"
  | "model_exceeds_memory"
  | "enable_gpu"
  | "local_engine"
  | "smaller_quantization"
  | "none";

/** One change and why it helps. */
export interface Advice {
  id: AdviceId;
  change: string;
  reason: string;
}

/** Bits per weight of a llama.cpp Q4_0 tensor (4-bit weights and an f16 scale per 32). */
const Q4_0_BITS = 4.5;
/** A model smaller than this stays largely in CPU caches, so its decode is not memory-bound. */
const MEMORY_BOUND_BYTES = 256 * 1024 * 1024;
/** Nominal bits per weight, for files whose parameter count could not be read. */
const QUANT_BITS: Record<string, number> = { F32: 32, F16: 16, BF16: 16, Q8_0: 8.5, Q6_K: 6.56 };

/**
 * The changes that would help, most helpful first (never empty: `none` when nothing stands out).
 * Ranked by how much each costs when ignored: a missing model runs nothing; threads above the
 * physical cores slow decode many times; a model larger than free memory pages from disk; an unused
 * GPU leaves most of the speed; a wide quantization makes memory-bound CPU decode read more per token.
 */
export function adviseChanges(facts: DoctorFacts): Advice[] {
  const advice: Advice[] = [];
  const { model } = facts;
  if ("missing" in model) advice.push({ id: "model_missing", change: model.fix, reason: model.missing });
  if (facts.threads > facts.physicalCores) {
    advice.push({
      id: "threads_above_cores",
      change: `drop --threads (the default is the ${facts.physicalCores} physical cores)`,
      reason: `${facts.threads} threads on ${facts.physicalCores} physical cores wait on each other at every step; decode gets many times slower`,
    });
  }
  const fits = "missing" in model || model.bytes <= facts.freeMemoryBytes;
  if (!fits && "bytes" in model) {
    advice.push({
      id: "model_exceeds_memory",
      change: "use a smaller quantization or a smaller model",
      reason: `the model (${formatBytes(model.bytes)}) is larger than the free memory (${formatBytes(facts.freeMemoryBytes)}): it would be read from disk`,
    });
  }
  if (facts.gpu && facts.backend === "cpu") {
    const first = facts.gpu.prerequisite ? ` (first install ${facts.gpu.prerequisite})` : "";
    advice.push({
      id: "enable_gpu",
      change: `run: ${facts.gpu.command}${first}`,
      reason: `${facts.gpu.found} was found but decoding runs on the CPU; on a GPU it is many times faster`,
    });
  }
  if (facts.backend === "cpu" && facts.engineBuild === "prebuilt") {
    advice.push({
      id: "local_engine",
      change: "run: npm run build:engine (once; a few minutes; needs cmake and a C++ compiler)",
      reason:
        "the prebuilt binary hands every token through libuv's thread pool and builds a threadpool per step; " +
        "the local build decodes in a native loop on a persistent threadpool, as fast as llama-server on a 2-core CPU " +
        "where the prebuilt binary reached 0.68x of it",
    });
  }
  const bits = "bytes" in model ? bitsPerWeight(model) : null;
  if (
    facts.backend === "cpu" &&
    "bytes" in model &&
    fits &&
    model.bytes >= MEMORY_BOUND_BYTES &&
    bits !== null &&
    bits > 6
  ) {
    const speedup = bits / Q4_0_BITS;
    advice.push({
      id: "smaller_quantization",
      change: `use the Q4_0 file of this model${model.quantization ? ` instead of ${model.quantization}` : ""}`,
      reason:
        `decode on the CPU is memory-bound: each token reads the whole model (${formatBytes(model.bytes)}, ` +
        `${bits.toFixed(1)} bits per weight); Q4_0 (~${Q4_0_BITS}) would read ${speedup.toFixed(1)}x less, so decode ` +
        `would be about ${speedup.toFixed(1)}x faster (Q4_0 rather than Q4_K_M: its prompt processing is faster on CPUs)`,
    });
  }
  if (advice.length === 0) {
    advice.push({
      id: "none",
      change: "nothing to change",
      reason:
        "threads match the physical cores, the model fits in memory, the engine is the local build, and no unused GPU was found",
    });
  }
  return advice;
}

function bitsPerWeight(model: { bytes: number; parameters: number | null; quantization: string | null }) {
  if (model.parameters !== null && model.parameters > 0) return (model.bytes * 8) / model.parameters;
  return model.quantization ? (QUANT_BITS[model.quantization] ?? null) : null;
}
