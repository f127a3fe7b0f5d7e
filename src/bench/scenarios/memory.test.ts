import { describe, expect, it } from "vitest";
import { residentOf } from "./memory.js";

describe.runIf(process.platform === "linux")("residentOf", () => {
  it("reads a live process's resident memory as anonymous plus file-backed MiB", async () => {
    const resident = await residentOf(process.pid);
    expect(resident.rss).toBeGreaterThan(1);
    expect(resident.anon).toBeGreaterThan(0);
    expect(resident.file).toBeGreaterThan(0);
    // VmRSS also counts shared memory (RssShmem); it is never less than the two.
    expect(resident.rss).toBeGreaterThanOrEqual(resident.anon + resident.file - 1);
  });

  it("rejects for a process that does not exist, rather than reporting zero", async () => {
    await expect(residentOf(2 ** 22 + 1)).rejects.toThrow(/ENOENT/);
  });
});
