#!/usr/bin/env node
// `npm run test:unit`: the tests that start no process, browser or model, in parallel (seconds).
// A test file is a unit test unless its source names one of the things below; the rest run in
// `npm test` only. Extra arguments go to vitest (`npm run test:unit -- --watch`).
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

const HEAVY = [
  "child_process", // the real binary, tmux, code-server, git, bubblewrap, llama-server
  "test-support/spark-binary",
  "test-support/test-model", // a GGUF loaded by llama.cpp
  "test-support/browser", // Chromium
  "node-llama-cpp",
  "LlamaEngine",
  "ensureSyntheticModel", // writes a model of hundreds of MB
  "real-model",
];

function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".test.ts"))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

const files = ["src", "vscode/src"]
  .flatMap(testFiles)
  .filter((file) => !HEAVY.some((name) => readFileSync(file, "utf8").includes(name)))
  .sort();
const vitest = path.join("node_modules", "vitest", "vitest.mjs");
const run = spawnSync(
  process.execPath,
  // Four workers on any machine: these tests mostly wait on sockets and timers, not on the CPU.
  [vitest, "run", "--fileParallelism", "--maxWorkers=4", ...files, ...process.argv.slice(2)],
  { stdio: "inherit" },
);
process.exit(run.status ?? 1);
