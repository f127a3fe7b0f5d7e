import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { findLlamaServer } from "./llama-server-binary.js";

test("a --peer-bin that is missing or not an executable file is refused with how to build one", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-peer-bin-"));
  try {
    for (const peerBin of [path.join(dir, "llama-server"), dir]) {
      const found = findLlamaServer(peerBin);
      expect("missing" in found && found.missing).toContain(
        `--peer-bin ${peerBin} is not an executable file`,
      );
      expect("missing" in found && found.missing).toContain("npm run build:llama-server");
    }
  } finally {
    await rm(dir, { recursive: true });
  }
});

test("an executable --peer-bin is used as given", () => {
  expect(findLlamaServer(process.execPath)).toEqual({ binary: process.execPath });
});

test("without --peer-bin, the build cache is used for the bundled llama.cpp, and an empty one says how to build", async () => {
  const cache = await mkdtemp(path.join(os.tmpdir(), "spark-llama-server-cache-"));
  const before = process.env.SPARK_LLAMA_SERVER_CACHE;
  process.env.SPARK_LLAMA_SERVER_CACHE = cache;
  try {
    const found = findLlamaServer();
    const missing = "missing" in found ? found.missing : "";
    expect(missing).toContain("npm run build:llama-server");
    // Where scripts/build-llama-server.sh puts its build: <cache>/<bundled commit>/build/bin/.
    const expected = /looked for (\S+)\)/.exec(missing)?.[1];
    expect(expected).toMatch(new RegExp(`^${cache}/[0-9a-f]{40}/build/bin/llama-server$`));
    await mkdir(path.dirname(expected!), { recursive: true });
    await writeFile(expected!, "#!/bin/sh\n", { mode: 0o755 });
    expect(findLlamaServer()).toEqual({ binary: expected });
  } finally {
    if (before === undefined) delete process.env.SPARK_LLAMA_SERVER_CACHE;
    else process.env.SPARK_LLAMA_SERVER_CACHE = before;
    await rm(cache, { recursive: true });
  }
});
