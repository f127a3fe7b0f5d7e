import { execFileSync } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { repoRoot } from "./repo-paths.js";

/** What builds the comparison binary (scripts/build-llama-server.sh; about 10 minutes on 2 cores). */
const BUILD =
  'npm run build:llama-server, then pass --peer-bin "$(npm run -s build:llama-server | tail -n1)"';

export type LlamaServerLookup = { binary: string } | { missing: string };

/**
 * The `llama-server` to compare Spark with: `peerBin` when given, else the build that
 * scripts/build-llama-server.sh caches for the llama.cpp node-llama-cpp bundles
 * (`$SPARK_LLAMA_SERVER_CACHE`, default `~/.cache/spark/llama-server`, `/<commit>/build/bin/`).
 * When there is none, `missing` says why and how to build one.
 */
export function findLlamaServer(peerBin?: string): LlamaServerLookup {
  if (peerBin !== undefined) {
    return executable(peerBin)
      ? { binary: peerBin }
      : { missing: `--peer-bin ${peerBin} is not an executable file; to build llama-server: ${BUILD}` };
  }
  const commit = bundledCommit();
  const cache =
    process.env.SPARK_LLAMA_SERVER_CACHE || path.join(os.homedir(), ".cache", "spark", "llama-server");
  const binary = commit === undefined ? undefined : path.join(cache, commit, "build", "bin", "llama-server");
  if (binary !== undefined && executable(binary)) return { binary };
  return {
    missing: `no llama-server built (looked for ${binary ?? `${cache}/<commit>`}); to build it: ${BUILD}`,
  };
}

/** The llama.cpp commit node-llama-cpp bundles: the HEAD of its git bundle. */
function bundledCommit(): string | undefined {
  const bundle = path.join(repoRoot(), "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle");
  try {
    const heads = execFileSync("git", ["bundle", "list-heads", bundle], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return /^([0-9a-f]{40}) HEAD$/m.exec(heads)?.[1];
  } catch {
    return undefined;
  }
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
