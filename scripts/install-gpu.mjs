#!/usr/bin/env node
// Installs node-llama-cpp's prebuilt GPU binary (`npm run gpu:cuda`, `npm run gpu:vulkan`).
//
// Why a script: package.json's `overrides` replace the CUDA and Vulkan prebuilt packages with an
// empty package, so a CPU-only `npm ci` stays lean (no hundreds of MB of GPU libraries). The same
// overrides make `npm install @node-llama-cpp/linux-x64-cuda` fail (EOVERRIDE). So this script
// fetches the package at node-llama-cpp's exact version with `npm pack` (which ignores overrides)
// and unpacks its binaries into node-llama-cpp's own prebuilt folder,
// node_modules/node-llama-cpp/bins/<platform>-<arch>-<gpu>, the first place getLlama looks. A later
// `npm ci` removes them with the rest of node_modules: run this again after one (`spark serve` and
// `spark doctor` say so when they see the GPU but run on the CPU).
//
// SPARK_NODE_MODULES points it at another node_modules (default: this checkout's).
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const gpu = process.argv[2];
if (gpu !== "cuda" && gpu !== "vulkan") {
  process.stderr.write("usage: node scripts/install-gpu.mjs cuda|vulkan\n");
  process.exit(2);
}

const repo = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const nodeModules = process.env.SPARK_NODE_MODULES ?? path.join(repo, "node_modules");
const llamaDir = path.join(nodeModules, "node-llama-cpp");
const { version } = JSON.parse(readFileSync(path.join(llamaDir, "package.json"), "utf8"));

// node-llama-cpp publishes CUDA and Vulkan prebuilt binaries for Linux and Windows on x64 only.
const platform = { linux: "linux", win32: "win" }[process.platform];
if (platform === undefined || process.arch !== "x64") {
  process.stderr.write(
    `No prebuilt ${gpu} binary of node-llama-cpp for ${process.platform}-${process.arch}. ` +
      `Build one from source (needs cmake, a C++ compiler and the ${gpu === "cuda" ? "CUDA toolkit" : "Vulkan SDK"}):\n` +
      `  npx --no node-llama-cpp source download --gpu ${gpu}\n`,
  );
  process.exit(1);
}

const folder = `${platform}-x64-${gpu}`;
// The CUDA package's "-ext" companion holds the fallback backends node-llama-cpp tries when the
// main CUDA backend does not load (older drivers); it belongs beside the main binary.
const packages = gpu === "cuda" ? [folder, `${folder}-ext`] : [folder];
const target = path.join(llamaDir, "bins", folder);
const work = mkdtempSync(path.join(os.tmpdir(), "spark-gpu-"));

function npm(args) {
  const cli = process.env.npm_execpath;
  return cli
    ? execFileSync(process.execPath, [cli, ...args], { encoding: "utf8" })
    : execFileSync(process.platform === "win32" ? "npm.cmd" : "npm", args, { encoding: "utf8" });
}

try {
  rmSync(target, { recursive: true, force: true });
  for (const name of packages) {
    const spec = `@node-llama-cpp/${name}@${version}`;
    process.stderr.write(`Fetching ${spec}...\n`);
    const [packed] = JSON.parse(npm(["pack", spec, "--pack-destination", work, "--json"]));
    const unpacked = path.join(work, name);
    cpSync(path.join(work, packed.filename), `${unpacked}.tgz`);
    mkdirSync(unpacked, { recursive: true });
    execFileSync("tar", ["-xzf", `${unpacked}.tgz`, "-C", unpacked]);
    const bins = path.join(unpacked, "package", "bins", folder);
    if (!existsSync(bins)) throw new Error(`${spec} has no bins/${folder} folder`);
    cpSync(bins, target, { recursive: true });
  }
  process.stderr.write(
    `Installed node-llama-cpp ${version}'s ${gpu} binary in ${target}.\n` +
      "Spark uses it at the next start (spark serve prints the backend; spark doctor checks it).\n",
  );
} catch (error) {
  rmSync(target, { recursive: true, force: true });
  process.stderr.write(`Could not install the ${gpu} binary: ${error.message}\n`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
