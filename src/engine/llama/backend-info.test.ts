import { describe, expect, test } from "vitest";
import { cpuVariantOf, describeBackend, loadedLibraries } from "./backend-info.js";

const AVX512_INFO =
  "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | AVX512 = 1 | LLAMAFILE = 1 | OPENMP = 1 | ";

describe("cpuVariantOf", () => {
  test("the ggml-cpu variant the prebuilt binary loaded", () => {
    const libraries = [
      "/x/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so",
      "/x/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-cpu-zen4.so",
    ];
    expect(cpuVariantOf(libraries, AVX512_INFO)).toBe("zen4");
    expect(cpuVariantOf(["/n/ggml-cpu-haswell.dll"], "")).toBe("haswell");
  });

  test("a local build's single ggml-cpu library is built for this machine", () => {
    expect(cpuVariantOf(["/x/localBuilds/linux-x64/Release/libggml-cpu.so"], AVX512_INFO)).toBe("native");
  });

  test("without a loaded library to go by, the best instruction set in llama.cpp's system info", () => {
    expect(cpuVariantOf([], AVX512_INFO)).toBe("avx512");
    expect(cpuVariantOf(["/usr/lib/libc.so.6"], "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 0 |")).toBe(
      "avx2",
    );
    expect(cpuVariantOf([], "CPU : NEON = 1 | ARM_FMA = 1 | DOTPROD = 1 |")).toBe("neon");
    expect(cpuVariantOf([], "")).toBe("unknown");
  });
});

test("describeBackend is one line with backend, variant and threads", () => {
  expect(describeBackend({ backend: "cpu", cpuVariant: "zen4", build: "prebuilt" }, 8)).toBe(
    "backend cpu, CPU variant zen4, 8 threads",
  );
  expect(describeBackend({ backend: "cuda", cpuVariant: "native", build: "local" }, 1)).toBe(
    "backend cuda, CPU variant native, 1 thread",
  );
});

test.runIf(process.platform === "linux")("loadedLibraries lists this process's mapped files", () => {
  expect(loadedLibraries().some((file) => /\/libc[.-]/.test(file) || file.endsWith("/node"))).toBe(true);
});
