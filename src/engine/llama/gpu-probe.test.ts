import { watch } from "node:fs";
import { chmod, mkdtemp, readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import {
  type GpuProbeSystem,
  gpuEnableStep,
  gpuNotice,
  nodeGpuProbeSystem,
  parseNvidiaSmi,
  probeGpu,
} from "./gpu-probe.js";

interface FakeMachine {
  files?: Record<string, string>;
  dirs?: Record<string, string[]>;
  tools?: Record<string, string | "hang" | null>;
  platform?: NodeJS.Platform;
  arch?: string;
}

/** A machine made of the given files, directories and tool outputs; `signals` records each run's. */
function fakeSystem(machine: FakeMachine): GpuProbeSystem & { signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  return {
    signals,
    platform: machine.platform ?? "linux",
    arch: machine.arch ?? "x64",
    env: {},
    exists: async (file) => file in (machine.files ?? {}),
    readText: async (file) => machine.files?.[file] ?? null,
    list: async (dir) => machine.dirs?.[dir] ?? [],
    run: (command, _args, signal) => {
      signals.push(signal);
      const output = machine.tools?.[command] ?? null;
      return output === "hang" ? new Promise(() => {}) : Promise.resolve(output);
    },
  };
}

const NVIDIA_DRIVER = {
  "/proc/driver/nvidia/version": "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14",
  "/dev/nvidia0": "",
};
const CUDA_RUNTIME = ["libcudart.so.12", "libcublas.so.12", "libcublasLt.so.12.4.5.8"];
const VULKAN_SUMMARY = `==========
VULKANINFO
==========
Devices:
========
GPU0:
	apiVersion         = 1.3.274
	deviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
	deviceName         = AMD Radeon RX 7900 XTX (RADV NAVI31)
GPU1:
	deviceType         = PHYSICAL_DEVICE_TYPE_CPU
	deviceName         = llvmpipe (LLVM 17.0.6, 256 bits)
`;

describe("probeGpu", () => {
  test("an NVIDIA GPU with the CUDA runtime: named by nvidia-smi, enabled by npm run gpu:cuda", async () => {
    const probe = await probeGpu({
      system: fakeSystem({
        files: NVIDIA_DRIVER,
        dirs: { "/usr/lib/x86_64-linux-gnu": ["libc.so.6", ...CUDA_RUNTIME] },
        tools: { "nvidia-smi": "NVIDIA H100 80GB HBM3, 81559\n" },
      }),
    });
    expect(probe).toEqual({
      gpus: [
        {
          backend: "cuda",
          name: "NVIDIA H100 80GB HBM3",
          memoryBytes: 81559 * 1024 * 1024,
          evidence: ["/proc/driver/nvidia/version", "/dev/nvidia0", "nvidia-smi"],
        },
      ],
      cudaRuntime: true,
      vulkanLoader: false,
      notes: [],
    });
    expect(gpuEnableStep(probe, { arch: "x64" })).toMatchObject({
      backend: "cuda",
      command: "npm run gpu:cuda",
      prerequisite: null,
    });
    expect(gpuEnableStep(probe, { arch: "arm64" })?.command).toBe(
      "npx --no node-llama-cpp source download --gpu cuda",
    );
  });

  test("an NVIDIA driver without the CUDA runtime: Vulkan when its loader is there, else CUDA with what it needs", async () => {
    const withVulkan = await probeGpu({
      system: fakeSystem({
        files: NVIDIA_DRIVER,
        dirs: { "/usr/lib/x86_64-linux-gnu": ["libvulkan.so.1"], "/dev/dri": ["card0", "renderD128"] },
      }),
    });
    expect(withVulkan.gpus.map((gpu) => gpu.backend)).toEqual(["cuda", "vulkan"]);
    expect(gpuEnableStep(withVulkan, { arch: "x64" })).toMatchObject({
      backend: "vulkan",
      command: "npm run gpu:vulkan",
      gpu: { backend: "cuda", name: null },
    });
    const bare = await probeGpu({ system: fakeSystem({ files: NVIDIA_DRIVER }) });
    expect(gpuEnableStep(bare, { arch: "x64" })).toMatchObject({
      backend: "cuda",
      command: "npm run gpu:cuda",
      prerequisite: expect.stringContaining("libcudart"),
    });
  });

  test("a Vulkan GPU: render node and loader, named by vulkaninfo without its CPU rasteriser", async () => {
    const probe = await probeGpu({
      system: fakeSystem({
        dirs: { "/usr/lib64": ["libvulkan.so.1.3.275"], "/dev/dri": ["card1", "renderD128"] },
        tools: { vulkaninfo: VULKAN_SUMMARY },
      }),
    });
    expect(probe.gpus).toEqual([
      {
        backend: "vulkan",
        name: "AMD Radeon RX 7900 XTX (RADV NAVI31)",
        memoryBytes: null,
        evidence: ["/dev/dri/renderD128", "vulkaninfo"],
      },
    ]);
    expect(gpuEnableStep(probe, { arch: "x64" })?.command).toBe("npm run gpu:vulkan");
  });

  test("a render node without the Vulkan loader, or the loader without a render node, is no GPU", async () => {
    const machines: Record<string, string[]>[] = [
      { "/dev/dri": ["renderD128"] },
      { "/usr/lib": ["libvulkan.so.1"] },
    ];
    for (const dirs of machines) {
      const probe = await probeGpu({ system: fakeSystem({ dirs }) });
      expect(probe.gpus).toEqual([]);
      expect(gpuEnableStep(probe, { arch: "x64" })).toBeNull();
    }
  });

  test("a CPU-only machine: nothing found, nothing to enable", async () => {
    const probe = await probeGpu({ system: fakeSystem({ dirs: { "/usr/lib": ["libc.so.6"] } }) });
    expect(probe).toEqual({ gpus: [], cudaRuntime: false, vulkanLoader: false, notes: [] });
    expect(gpuEnableStep(probe, { arch: "x64" })).toBeNull();
  });

  test("Apple Silicon has Metal, which the default install already uses", async () => {
    const probe = await probeGpu({ system: fakeSystem({ platform: "darwin", arch: "arm64" }) });
    expect(probe.gpus.map((gpu) => gpu.backend)).toEqual(["metal"]);
    expect(gpuEnableStep(probe, { arch: "arm64" })).toBeNull();
    expect((await probeGpu({ system: fakeSystem({ platform: "darwin", arch: "x64" }) })).gpus).toEqual([]);
  });

  test("a hanging nvidia-smi is given up on after the time bound, its run aborted, the GPU still found", async () => {
    const system = fakeSystem({ files: NVIDIA_DRIVER, tools: { "nvidia-smi": "hang" } });
    const probe = await probeGpu({ system, toolTimeoutMs: 50 });
    expect(probe.gpus).toEqual([
      {
        backend: "cuda",
        name: null,
        memoryBytes: null,
        evidence: ["/proc/driver/nvidia/version", "/dev/nvidia0"],
      },
    ]);
    expect(probe.notes).toEqual(["nvidia-smi did not answer within 50 ms and was stopped"]);
    expect(system.signals.every((signal) => signal.aborted)).toBe(true);
  });

  test("malformed tool output is noted and ignored", async () => {
    const probe = await probeGpu({
      system: fakeSystem({
        files: NVIDIA_DRIVER,
        dirs: { "/usr/lib": ["libvulkan.so"], "/dev/dri": ["renderD129"] },
        tools: {
          "nvidia-smi": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.",
          vulkaninfo: "ERROR: [Loader Message] Code 0 : vkCreateInstance failed",
        },
      }),
    });
    expect(probe.gpus.map((gpu) => [gpu.backend, gpu.name])).toEqual([
      ["cuda", null],
      ["vulkan", null],
    ]);
    expect(probe.notes).toEqual([
      expect.stringMatching(/^nvidia-smi answered something Spark could not read/),
      "vulkaninfo --summary answered without a device list Spark could read",
    ]);
  });

  test("parseNvidiaSmi reads every GPU line and skips others", () => {
    expect(parseNvidiaSmi("NVIDIA A10, 23028\nNVIDIA A10, 23028 MiB\n\n[N/A], garbage\n, 12\n")).toEqual([
      { name: "NVIDIA A10", memoryBytes: 23028 * 1024 * 1024 },
      { name: "NVIDIA A10", memoryBytes: 23028 * 1024 * 1024 },
    ]);
  });
});

describe("gpuNotice", () => {
  const nvidia = {
    gpus: [
      { backend: "cuda" as const, name: "NVIDIA L4", memoryBytes: 24 * 1024 ** 3, evidence: ["nvidia-smi"] },
    ],
    cudaRuntime: true,
    vulkanLoader: false,
    notes: [],
  };
  const base = {
    probe: nvidia,
    backend: "cpu",
    gpuDisabled: false,
    arch: "x64",
    binaryInstalled: () => false,
  };

  test("a GPU found while decoding on the CPU: one line with the command", () => {
    expect(gpuNotice(base)).toBe(
      "NVIDIA L4 (24.0 GiB) was found but decoding runs on the CPU; enable it with: npm run gpu:cuda",
    );
  });

  test("an installed binary that did not load points at node-llama-cpp's GPU check instead", () => {
    expect(gpuNotice({ ...base, binaryInstalled: (backend) => backend === "cuda" })).toMatch(
      /the cuda binary is installed and did not load; see npx --no node-llama-cpp inspect gpu$/,
    );
  });

  test("nothing to say on the GPU, with --no-gpu, or without a GPU", () => {
    expect(gpuNotice({ ...base, backend: "cuda" })).toBeNull();
    expect(gpuNotice({ ...base, gpuDisabled: true })).toBeNull();
    expect(gpuNotice({ ...base, probe: { ...nvidia, gpus: [] } })).toBeNull();
  });
});

describe("nodeGpuProbeSystem", () => {
  test("a tool that outlives its signal is killed, and the run answers null", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "spark-gpu-probe-"));
    const tool = path.join(dir, "nvidia-smi");
    const pidFile = path.join(dir, "pid");
    // Renamed into place, so the file appears with its content: the test waits for it, not a timer.
    await writeFile(
      tool,
      `#!/bin/sh\necho $$ > ${pidFile}.tmp\nmv ${pidFile}.tmp ${pidFile}\nexec sleep 30\n`,
    );
    await chmod(tool, 0o755);
    const started = new Promise<void>((resolve) => {
      const watcher = watch(dir, (_event, name) => {
        if (name === "pid") {
          watcher.close();
          resolve();
        }
      });
    });
    const controller = new AbortController();
    const running = nodeGpuProbeSystem().run(tool, [], controller.signal);
    await started;
    controller.abort();
    expect(await running).toBeNull();
    const pid = Number(await readFile(pidFile, "utf8"));
    expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
  });

  test("a missing tool answers null", async () => {
    expect(
      await nodeGpuProbeSystem().run("/nowhere/nvidia-smi", [], new AbortController().signal),
    ).toBeNull();
  });
});
