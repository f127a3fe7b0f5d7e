import { readFileSync } from "node:fs";
import os from "node:os";

/**
 * Physical cores, not hardware threads: llama.cpp's decode is memory-bound and a thread per
 * logical CPU (or its own default) oversubscribes small machines badly (100x slower here).
 */
export function physicalCoreCount(): number {
  const logical = os.availableParallelism();
  try {
    const cores = new Set<string>();
    let physicalId = "0";
    for (const line of readFileSync("/proc/cpuinfo", "utf8").split("\n")) {
      const [key, value] = line.split(":").map((part) => part.trim());
      if (key === "physical id") physicalId = value ?? "0";
      else if (key === "core id") cores.add(`${physicalId}:${value}`);
    }
    // Containers may show every host core in cpuinfo; never exceed what this process may use.
    return cores.size > 0 ? Math.min(cores.size, logical) : logical;
  } catch {
    return logical;
  }
}
