#!/usr/bin/env node
// `npm run fetch:acpx`: installs acpx (openclaw's headless ACP client, from npm) into a cache outside
// the repository, for the test that drives `spark acp` with a real ACP client (`.ci/run` runs it
// before `npm test`; the test skips, saying why, when it is absent). Not a devDependency: its native
// helper's lock entries for other platforms cannot all be resolved here, and `npm ci` needs them.
// Idempotent.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const VERSION = "0.19.1";
const dir = process.env.SPARK_ACPX_DIR || path.join(os.homedir(), ".cache", "spark", "acpx", VERSION);
if (existsSync(path.join(dir, "node_modules", "acpx", "dist", "cli.js"))) {
  console.log(`acpx ${VERSION} already in ${dir}`);
  process.exit(0);
}
const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const result = spawnSync(
  npm,
  ["install", "--prefix", dir, "--no-audit", "--no-fund", "--no-save", "--ignore-scripts", `acpx@${VERSION}`],
  { stdio: "inherit" },
);
if (result.status !== 0) {
  console.error(`fetch-acpx: npm install acpx@${VERSION} failed (exit ${result.status})`);
  process.exit(1);
}
console.log(`acpx ${VERSION} installed in ${dir}`);
