import { describe, expect, test } from "vitest";
import { adviseChanges, type DoctorFacts } from "./doctor-advice.js";

const GB = 1e9;
/** A 1.5B Q8_0 model on a 2-core CPU with memory to spare and no GPU. */
const facts: DoctorFacts = {
  backend: "cpu",
  engineBuild: "local",
  physicalCores: 2,
  threads: 2,
  freeMemoryBytes: 20 * GB,
  model: { bytes: 1.64 * GB, parameters: 1.54e9, quantization: "Q8_0" },
  gpu: null,
};
const ids = (f: DoctorFacts) => adviseChanges(f).map((advice) => advice.id);

describe("adviseChanges", () => {
  test("the prebuilt engine binary on the CPU: build the local engine, ranked before the quantization", () => {
    expect(ids({ ...facts, engineBuild: "prebuilt" })).toEqual(["local_engine", "smaller_quantization"]);
    expect(adviseChanges({ ...facts, engineBuild: "prebuilt" })[0]!.change).toContain("npm run build:engine");
    expect(ids({ ...facts, engineBuild: "prebuilt", backend: "cuda" })).not.toContain("local_engine");
  });

  test("a wide quantization on the CPU: Q4_0, with the speedup from bits per weight", () => {
    const [first] = adviseChanges(facts);
    expect(first).toMatchObject({
      id: "smaller_quantization",
      change: "use the Q4_0 file of this model instead of Q8_0",
    });
    expect(first!.reason).toContain("memory-bound");
    expect(first!.reason).toContain("8.5 bits per weight");
    expect(first!.reason).toContain("about 1.9x faster");
  });

  test("without a parameter count, the quantization's nominal bits", () => {
    const [first] = adviseChanges({
      ...facts,
      model: { bytes: 3 * GB, parameters: null, quantization: "F16" },
    });
    expect(first!.reason).toContain("about 3.6x faster");
  });

  test("nothing to change for a 4-bit model, a model that fits in caches, or decoding on a GPU", () => {
    expect(ids({ ...facts, model: { bytes: 0.9 * GB, parameters: 1.54e9, quantization: "Q4_0" } })).toEqual([
      "none",
    ]);
    expect(ids({ ...facts, model: { bytes: 20e6, parameters: 20e6 / 1.06, quantization: "Q8_0" } })).toEqual([
      "none",
    ]);
    expect(ids({ ...facts, backend: "cuda" })).toEqual(["none"]);
  });

  test("ranked: a missing model, then threads above the cores, then memory, then an unused GPU", () => {
    const gpu = { found: "NVIDIA L4 (24.0 GiB)", command: "npm run gpu:cuda", prerequisite: null };
    expect(ids({ ...facts, threads: 4, gpu })).toEqual([
      "threads_above_cores",
      "enable_gpu",
      "smaller_quantization",
    ]);
    expect(ids({ ...facts, freeMemoryBytes: 1 * GB, gpu })).toEqual(["model_exceeds_memory", "enable_gpu"]);
    expect(
      ids({
        ...facts,
        threads: 3,
        model: { missing: "hf:a/b/c.gguf is not in the cache", fix: "run: spark models pull hf:a/b/c.gguf" },
      }),
    ).toEqual(["model_missing", "threads_above_cores"]);
  });

  test("each change says what to do and why", () => {
    const gpu = { found: "an NVIDIA GPU", command: "npm run gpu:cuda", prerequisite: "the CUDA runtime" };
    const advice = adviseChanges({ ...facts, threads: 8, gpu });
    expect(advice[0]).toEqual({
      id: "threads_above_cores",
      change: "drop --threads (the default is the 2 physical cores)",
      reason: "8 threads on 2 physical cores wait on each other at every step; decode gets many times slower",
    });
    expect(advice[1]).toEqual({
      id: "enable_gpu",
      change: "run: npm run gpu:cuda (first install the CUDA runtime)",
      reason: "an NVIDIA GPU was found but decoding runs on the CPU; on a GPU it is many times faster",
    });
  });
});
