#!/usr/bin/env node
// `npm run fetch:router`: installs vLLM's router (the Rust `vllm-router` from PyPI) into a cache
// outside the repository, for the tests that put Spark behind a real router (`.ci/run` runs it
// before `npm test`; the tests skip, saying why, when it is absent). Idempotent.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const VERSION = "0.1.17";
const dir =
  process.env.SPARK_ROUTER_DIR ||
  path.join(os.homedir(), ".cache", "spark", "routers", `vllm-router-${VERSION}`);
if (existsSync(path.join(dir, "vllm_router", "launch_router.py"))) {
  console.log(`vllm-router ${VERSION} already in ${dir}`);
  process.exit(0);
}
const python = process.env.PYTHON || "python3";
const result = spawnSync(
  python,
  [
    "-m",
    "pip",
    "install",
    "--quiet",
    "--disable-pip-version-check",
    "--target",
    dir,
    `vllm-router==${VERSION}`,
  ],
  { stdio: "inherit" },
);
if (result.status !== 0) {
  console.error(`fetch-router: pip install vllm-router==${VERSION} failed (exit ${result.status})`);
  process.exit(1);
}
console.log(`vllm-router ${VERSION} installed in ${dir}`);
