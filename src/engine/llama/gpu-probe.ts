import { execFile } from "node:child_process";
import { readdir, readFile, stat } from "node:fs/promises";

/** A GPU compute backend llama.cpp can decode on. */
export type GpuBackend = "cuda" | "vulkan" | "metal";

/** One GPU found without loading any GPU library. */
export interface DetectedGpu {
  backend: GpuBackend;
  /** The device's name, when a tool named it (`nvidia-smi`, `vulkaninfo`). */
  name: string | null;
  /** Its memory in bytes, when a tool said. */
  memoryBytes: number | null;
  /** What showed it: files, devices, tools. */
  evidence: string[];
}

/** What {@link probeGpu} found. */
export interface GpuProbe {
  /** Best backend first: CUDA, then Vulkan, then Metal. Empty on a CPU-only machine. */
  gpus: DetectedGpu[];
  /** NVIDIA's CUDA runtime libraries (libcudart, libcublas, libcublasLt): the CUDA binary needs them. */
  cudaRuntime: boolean;
  /** The Vulkan loader (libvulkan): the Vulkan binary needs it. */
  vulkanLoader: boolean;
  /** What the probe could not settle (a tool that hung or answered garbage). */
  notes: string[];
}

/** How the probe sees the machine; tests pass fakes. Every method answers, never throws. */
export interface GpuProbeSystem {
  platform: NodeJS.Platform;
  arch: string;
  env: NodeJS.ProcessEnv;
  exists(file: string): Promise<boolean>;
  /** The file's text, or null when it cannot be read. */
  readText(file: string): Promise<string | null>;
  /** The names in a directory, or none when it cannot be read. */
  list(dir: string): Promise<string[]>;
  /**
   * Runs a command found on PATH and resolves with its stdout, or null when it is missing or fails.
   * Aborting `signal` must kill it.
   */
  run(command: string, args: string[], signal: AbortSignal): Promise<string | null>;
}

export interface GpuProbeOptions {
  /** Default: this machine ({@link nodeGpuProbeSystem}). */
  system?: GpuProbeSystem;
  /** Longest wait for each tool (`nvidia-smi`, `vulkaninfo`), in ms. Default: 2000. */
  toolTimeoutMs?: number;
}

/** Where Linux distributions and the CUDA toolkit put shared libraries. */
const LIBRARY_DIRS = [
  "/usr/lib",
  "/usr/lib64",
  "/usr/lib/x86_64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
  "/usr/local/cuda/lib64",
  "/usr/local/cuda/targets/x86_64-linux/lib",
  "/usr/local/cuda/targets/sbsa-linux/lib",
];

/**
 * Looks for a GPU llama.cpp could use, without loading a GPU library: NVIDIA by its kernel driver
 * (`/proc/driver/nvidia/version`, `/dev/nvidia0`) and `nvidia-smi`; Vulkan by its loader library
 * and a render node (`/dev/dri/renderD*`), named by `vulkaninfo` when installed; Metal on Apple
 * Silicon. Each tool gets at most `toolTimeoutMs`; a hung one is killed and noted.
 */
export async function probeGpu(options: GpuProbeOptions = {}): Promise<GpuProbe> {
  const system = options.system ?? nodeGpuProbeSystem();
  const timeoutMs = options.toolTimeoutMs ?? 2000;
  if (system.platform === "darwin") {
    const gpus: DetectedGpu[] =
      system.arch === "arm64"
        ? [{ backend: "metal", name: "Apple Silicon", memoryBytes: null, evidence: ["darwin-arm64"] }]
        : [];
    return { gpus, cudaRuntime: false, vulkanLoader: false, notes: [] };
  }
  if (system.platform !== "linux") return { gpus: [], cudaRuntime: false, vulkanLoader: false, notes: [] };

  // Each probe notes on its own list, so the notes come in one order however the probes interleave.
  const nvidiaNotes: string[] = [];
  const vulkanNotes: string[] = [];
  const tool = (into: string[]) => (command: string, args: string[]) =>
    runBounded(system, command, args, timeoutMs, into);
  const libraryDirs = [
    ...(system.env.LD_LIBRARY_PATH ?? "").split(":").filter((dir) => dir !== ""),
    ...LIBRARY_DIRS,
  ];
  const [nvidia, vulkan, libraries] = await Promise.all([
    probeNvidia(system, tool(nvidiaNotes), nvidiaNotes),
    probeVulkan(system, tool(vulkanNotes), vulkanNotes),
    librariesIn(system, libraryDirs),
  ]);
  const has = (pattern: RegExp) => libraries.some((name) => pattern.test(name));
  const cudaRuntime =
    has(/^libcudart\.so(\.\d+)*$/) && has(/^libcublas\.so(\.\d+)*$/) && has(/^libcublasLt\.so(\.\d+)*$/);
  const vulkanLoader = has(/^libvulkan\.so(\.\d+)*$/);
  const gpus = [...nvidia];
  if (vulkanLoader) gpus.push(...vulkan);
  return { gpus, cudaRuntime, vulkanLoader, notes: [...nvidiaNotes, ...vulkanNotes] };
}

type Tool = (command: string, args: string[]) => Promise<string | null>;

async function probeNvidia(system: GpuProbeSystem, tool: Tool, notes: string[]): Promise<DetectedGpu[]> {
  const evidence: string[] = [];
  if ((await system.readText("/proc/driver/nvidia/version"))?.includes("NVIDIA"))
    evidence.push("/proc/driver/nvidia/version");
  if (await system.exists("/dev/nvidia0")) evidence.push("/dev/nvidia0");
  const smi = await tool("nvidia-smi", ["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"]);
  const named = smi === null ? [] : parseNvidiaSmi(smi);
  if (smi !== null && named.length === 0 && smi.trim() !== "")
    notes.push(
      `nvidia-smi answered something Spark could not read: ${JSON.stringify(smi.trim().slice(0, 80))}`,
    );
  if (named.length > 0) {
    return named.map((gpu) => ({ backend: "cuda", ...gpu, evidence: [...evidence, "nvidia-smi"] }));
  }
  return evidence.length > 0 ? [{ backend: "cuda", name: null, memoryBytes: null, evidence }] : [];
}

async function probeVulkan(system: GpuProbeSystem, tool: Tool, notes: string[]): Promise<DetectedGpu[]> {
  const renderNodes = (await system.list("/dev/dri")).filter((name) => /^renderD\d+$/.test(name));
  if (renderNodes.length === 0) return [];
  const evidence = renderNodes.map((name) => `/dev/dri/${name}`);
  const info = await tool("vulkaninfo", ["--summary"]);
  if (info === null) return [{ backend: "vulkan", name: null, memoryBytes: null, evidence }];
  const devices = parseVulkanInfo(info);
  if (devices === null) {
    notes.push("vulkaninfo --summary answered without a device list Spark could read");
    return [{ backend: "vulkan", name: null, memoryBytes: null, evidence }];
  }
  // A CPU rasteriser (llvmpipe) is no faster than llama.cpp's own CPU backend.
  return devices
    .filter((device) => device.type !== "PHYSICAL_DEVICE_TYPE_CPU")
    .map((device) => ({
      backend: "vulkan",
      name: device.name,
      memoryBytes: null,
      evidence: [...evidence, "vulkaninfo"],
    }));
}

/** `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits` lines: `NAME, MiB`. */
export function parseNvidiaSmi(output: string): { name: string; memoryBytes: number | null }[] {
  const gpus: { name: string; memoryBytes: number | null }[] = [];
  for (const line of output.split("\n")) {
    const match = /^\s*([^,]*[^,\s][^,]*),\s*(\d+)(?:\s*MiB)?\s*$/.exec(line);
    if (match) gpus.push({ name: match[1]!.trim(), memoryBytes: Number(match[2]) * 1024 * 1024 });
  }
  return gpus;
}

/** The devices of `vulkaninfo --summary`, or null when its output has no device section. */
export function parseVulkanInfo(output: string): { name: string; type: string | null }[] | null {
  if (!/^Devices:/m.test(output)) return null;
  const devices: { name: string; type: string | null }[] = [];
  let type: string | null = null;
  for (const line of output.split("\n")) {
    const typeMatch = /^\s*deviceType\s*=\s*(\S+)/.exec(line);
    if (typeMatch) type = typeMatch[1]!;
    const nameMatch = /^\s*deviceName\s*=\s*(.+?)\s*$/.exec(line);
    if (nameMatch) {
      devices.push({ name: nameMatch[1]!, type });
      type = null;
    }
  }
  return devices;
}

async function librariesIn(system: GpuProbeSystem, dirs: string[]): Promise<string[]> {
  const lists = await Promise.all([...new Set(dirs)].map((dir) => system.list(dir)));
  return lists.flat();
}

/** Runs a tool, giving up (and killing it) after `timeoutMs`; a timeout is noted. */
async function runBounded(
  system: GpuProbeSystem,
  command: string,
  args: string[],
  timeoutMs: number,
  notes: string[],
): Promise<string | null> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), timeoutMs);
  });
  try {
    const result = await Promise.race([system.run(command, args, controller.signal), timedOut]);
    if (result !== "timeout") return result;
    notes.push(`${command} did not answer within ${timeoutMs} ms and was stopped`);
    return null;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** The probe's view of this machine. */
export function nodeGpuProbeSystem(): GpuProbeSystem {
  return {
    platform: process.platform,
    arch: process.arch,
    env: process.env,
    exists: (file) =>
      stat(file).then(
        () => true,
        () => false,
      ),
    readText: (file) => readFile(file, "utf8").catch(() => null),
    list: (dir) => readdir(dir).catch(() => []),
    run: (command, args, signal) =>
      new Promise((resolve) => {
        execFile(
          command,
          args,
          { signal, killSignal: "SIGKILL", maxBuffer: 1024 * 1024, encoding: "utf8" },
          (error, stdout) => resolve(error ? null : stdout),
        );
      }),
  };
}

/** The one step that turns GPU decoding on for a probed GPU. */
export interface GpuEnableStep {
  backend: "cuda" | "vulkan";
  gpu: DetectedGpu;
  /** The command to run in Spark's checkout. */
  command: string;
  /** What the machine needs before the command helps, when it lacks it. */
  prerequisite: string | null;
}

/**
 * The step that enables the best GPU found: `npm run gpu:cuda` where the CUDA runtime is installed,
 * else `npm run gpu:vulkan` where NVIDIA's (or another) Vulkan driver can run it; on other
 * architectures than x64, a source build (no prebuilt GPU binaries there). Null without a GPU, and
 * for Metal, which the default install already uses.
 */
export function gpuEnableStep(probe: GpuProbe, platform: { arch: string }): GpuEnableStep | null {
  const nvidia = probe.gpus.find((gpu) => gpu.backend === "cuda");
  const vulkan = probe.gpus.find((gpu) => gpu.backend === "vulkan");
  let backend: "cuda" | "vulkan";
  let gpu: DetectedGpu;
  let prerequisite: string | null = null;
  if (nvidia && (probe.cudaRuntime || !probe.vulkanLoader)) {
    backend = "cuda";
    gpu = nvidia;
    if (!probe.cudaRuntime)
      prerequisite =
        "NVIDIA's CUDA runtime libraries (libcudart, libcublas, libcublasLt: the CUDA toolkit, e.g. apt-get install nvidia-cuda-toolkit)";
  } else if (nvidia) {
    // NVIDIA's driver ships a Vulkan driver: without the CUDA runtime, Vulkan is the shorter way.
    backend = "vulkan";
    gpu = nvidia;
  } else if (vulkan) {
    backend = "vulkan";
    gpu = vulkan;
  } else return null;
  const command =
    platform.arch === "x64"
      ? `npm run gpu:${backend}`
      : `npx --no node-llama-cpp source download --gpu ${backend}`;
  return { backend, gpu, command, prerequisite };
}

/** "NVIDIA H100 80GB HBM3 (79.6 GiB)", or what kind of GPU it is when nothing named it. */
export function describeGpu(gpu: DetectedGpu): string {
  const kind = { cuda: "an NVIDIA GPU", vulkan: "a Vulkan GPU", metal: "an Apple GPU" }[gpu.backend];
  if (gpu.name === null) return kind;
  const memory = gpu.memoryBytes === null ? "" : ` (${(gpu.memoryBytes / 1024 ** 3).toFixed(1)} GiB)`;
  return `${gpu.name}${memory}`;
}

/** What a start knows when it says whether the GPU is used. */
export interface GpuNoticeInput {
  probe: GpuProbe;
  /** The backend llama.cpp loaded: `cpu` or a GPU backend. */
  backend: string;
  /** `--no-gpu`: the person chose the CPU, so nothing is said. */
  gpuDisabled: boolean;
  arch: string;
  /** Whether the binary for a backend is installed (see gpuBinaryInstalled). */
  binaryInstalled: (backend: "cuda" | "vulkan") => boolean;
}

/**
 * One line for a start that runs on the CPU although a GPU was found: the command that enables it,
 * or, when its binary is installed and still did not load, where to look. Null otherwise.
 */
export function gpuNotice(input: GpuNoticeInput): string | null {
  if (input.backend !== "cpu" || input.gpuDisabled) return null;
  const step = gpuEnableStep(input.probe, { arch: input.arch });
  if (step === null) return null;
  const found = `${describeGpu(step.gpu)} was found but decoding runs on the CPU`;
  if (input.binaryInstalled(step.backend)) {
    return `${found}: the ${step.backend} binary is installed and did not load; see npx --no node-llama-cpp inspect gpu`;
  }
  const first = step.prerequisite ? ` (it needs ${step.prerequisite})` : "";
  return `${found}; enable it with: ${step.command}${first}`;
}
