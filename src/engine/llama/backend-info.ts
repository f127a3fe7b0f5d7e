import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Llama } from "node-llama-cpp";
import { type GpuBackend, type GpuProbe, gpuNotice } from "./gpu-probe.js";

/** Where llama.cpp computes. */
export type ComputeBackend = "cpu" | GpuBackend;

/** What a loaded llama.cpp runs on. */
export interface BackendInfo {
  backend: ComputeBackend;
  /**
   * The CPU code path: the ggml-cpu variant the prebuilt binary picked for this CPU (`zen4`,
   * `skylakex`, `haswell`...), `native` for a local build compiled for this machine, else the best
   * instruction set llama.cpp reports (`avx512`, `avx2`, `neon`...).
   */
  cpuVariant: string;
  /** `local` after `npm run build:engine`, else node-llama-cpp's `prebuilt` binary. */
  build: "local" | "prebuilt";
}

/** The backend, CPU variant and build of a loaded llama.cpp. */
export function backendInfoOf(llama: Llama, libraries: string[] = loadedLibraries()): BackendInfo {
  return {
    backend: llama.gpu === false ? "cpu" : llama.gpu,
    cpuVariant: cpuVariantOf(libraries, llama.systemInfo),
    build: llama.buildType === "localBuild" ? "local" : "prebuilt",
  };
}

/** One line for start banners: `backend cpu, CPU variant zen4, 2 threads`. */
export function describeBackend(info: BackendInfo, threads: number): string {
  return `backend ${info.backend}, CPU variant ${info.cpuVariant}, ${threads} thread${threads === 1 ? "" : "s"}`;
}

/**
 * The CPU variant from the ggml-cpu library this process loaded (the prebuilt binary ships one per
 * CPU generation and loads the best for this CPU), else from llama.cpp's system info string.
 */
export function cpuVariantOf(libraries: string[], systemInfo: string): string {
  for (const library of libraries) {
    const name = path.basename(library);
    const variant = /^(?:lib)?ggml-cpu-([A-Za-z0-9_]+)\.(?:so|dylib|dll)$/.exec(name);
    if (variant) return variant[1]!;
    if (/^(?:lib)?ggml-cpu\.(?:so|dylib|dll)$/.test(name)) return "native";
  }
  const features = new Set(
    [...systemInfo.matchAll(/([A-Z0-9_]+) = 1/g)].map((match) => match[1]!.toLowerCase()),
  );
  for (const feature of ["avx512", "avx2", "avx", "sve", "neon", "sse3"]) {
    if (features.has(feature)) return feature;
  }
  return "unknown";
}

/** Shared libraries mapped into this process (Linux; none elsewhere). */
export function loadedLibraries(): string[] {
  try {
    const files = readFileSync("/proc/self/maps", "utf8")
      .split("\n")
      .map((line) => line.split(/\s+/)[5] ?? "")
      .filter((file) => file.startsWith("/"));
    return [...new Set(files)];
  } catch {
    return [];
  }
}

/**
 * Whether node-llama-cpp has a binary for `backend` on this platform: one that `npm run gpu:<backend>`
 * installed, a local build, or the prebuilt package itself (not the empty package that package.json's
 * overrides put in its place).
 */
export function gpuBinaryInstalled(
  backend: GpuBackend,
  platform: { platform: NodeJS.Platform; arch: string } = process,
): boolean {
  const system = { linux: "linux", win32: "win", darwin: "mac" }[platform.platform as string];
  if (system === undefined) return false;
  const folder = `${system}-${platform.arch}-${backend}`;
  const llamaDir = nodeLlamaCppDir();
  return (
    existsSync(path.join(llamaDir, "bins", folder, "_nlcBuildMetadata.json")) ||
    existsSync(path.join(llamaDir, "llama", "localBuilds", folder)) ||
    existsSync(path.join(llamaDir, "..", "@node-llama-cpp", folder, "bins", folder))
  );
}

function nodeLlamaCppDir(): string {
  // dist/index.js of the package.
  return path.dirname(path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp"))));
}

/**
 * The one line to print when this machine has a GPU the loaded model does not use (with the command
 * that enables it), or null. `probe` is a {@link probeGpu} started beside the model's load.
 */
export async function unusedGpuNotice(
  probe: Promise<GpuProbe>,
  backend: ComputeBackend,
): Promise<string | null> {
  return gpuNotice({
    probe: await probe,
    backend,
    gpuDisabled: false,
    arch: process.arch,
    binaryInstalled: (gpu) => gpuBinaryInstalled(gpu),
  });
}
