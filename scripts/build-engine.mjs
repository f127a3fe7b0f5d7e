#!/usr/bin/env node
// Builds node-llama-cpp's native addon, with Spark's patch (patches/node-llama-cpp+*.patch: a native
// greedy decode loop on a persistent threadpool), from the llama.cpp bundled in the package
// (llama/gitRelease.bundle; offline) with Spark's changes to it (patches/llama.cpp/*.diff).
// node-llama-cpp prefers a local build to its prebuilt binary.
//
// The build is cached outside the repository, in ${SPARK_ENGINE_CACHE:-~/.cache/spark/engine}/<key>,
// keyed by the node-llama-cpp version, the patches' hash and the CMake options: after a reinstall this script copies the
// cached build back in seconds instead of compiling again (a few minutes on 2 cores). Without a
// compiler it changes nothing and Spark keeps the prebuilt binary. Never run by `npm test`.
// `npm install` / `npm ci` of a checkout, and `npm install` of the package, run it as their
// postinstall (`--install`): it applies the patch first, wherever npm put node-llama-cpp (under
// this package, or hoisted beside it).
//
//   npm run build:engine                     (in a checkout)
//   node <spark package>/scripts/build-engine.mjs   (an installed Spark)
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { applyPatch as applyUnifiedPatch, parsePatch, reversePatch } from "diff";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// node-llama-cpp's folder (its dist/index.js, two up): under this package, or hoisted above it.
const packageDir = path.dirname(path.dirname(fileURLToPath(import.meta.resolve("node-llama-cpp"))));
const localBuilds = path.join(packageDir, "llama", "localBuilds");

const version = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")).version;
const patch = path.join(root, "patches", `node-llama-cpp+${version}.patch`);
// Changes to llama.cpp itself (patches/llama.cpp/*.diff, `git apply` form), applied to the clone of
// the bundled llama.cpp before it is built.
const llamaCppPatchDir = path.join(root, "patches", "llama.cpp");
const llamaCppPatches = existsSync(llamaCppPatchDir)
  ? readdirSync(llamaCppPatchDir)
      .filter((name) => name.endsWith(".diff"))
      .sort()
      .map((name) => path.join(llamaCppPatchDir, name))
  : [];
const patchHash = existsSync(patch)
  ? [patch, ...llamaCppPatches]
      .reduce(
        (hash, file) => hash.update(path.basename(file)).update(readFileSync(file)),
        createHash("sha256"),
      )
      .digest("hex")
      .slice(0, 12)
  : "unpatched";
// ggml's own threadpool, not OpenMP: the addon decodes from several libuv threads, each of which
// would get its own OpenMP team; with more team threads than cores libgomp stops spinning at its
// barriers and every barrier (about 150 a token) becomes a sleep and a wake-up.
const cmakeOptions = { GGML_OPENMP: "OFF" };
const optionsKey = Object.entries(cmakeOptions)
  .map(([name, value]) => `${name}=${value}`)
  .join(",");
const key = `${version}-${patchHash}-${createHash("sha256").update(optionsKey).digest("hex").slice(0, 6)}-${process.platform}-${process.arch}`;
const cacheRoot = process.env.SPARK_ENGINE_CACHE ?? path.join(os.homedir(), ".cache", "spark", "engine");
const cached = path.join(cacheRoot, key);

const say = (line) => process.stderr.write(`build-engine: ${line}\n`);
const buildCommand = `node ${JSON.stringify(path.join(root, "scripts", "build-engine.mjs"))}`;
/** Why there is no fast engine, what Spark runs on instead, and how to get it: said once, here. */
const keepPrebuilt = (why) =>
  say(
    `${why}: Spark runs on node-llama-cpp's prebuilt binary (it works, without the native decode loop ` +
      `that makes the local build faster). For the fast engine, install cmake and a C++ compiler, then run: ${buildCommand}`,
  );
// `--install` (npm's postinstall): the patch is applied first; SPARK_ENGINE_BUILD=0 skips the
// build (and the cache), and a failed build keeps the prebuilt binary instead of failing the install.
const onInstall = process.argv.includes("--install");
if (onInstall) applyPatch();
if (onInstall && process.env.SPARK_ENGINE_BUILD === "0") {
  keepPrebuilt("SPARK_ENGINE_BUILD=0");
  process.exit(0);
}

if (existsSync(path.join(cached, "done"))) {
  copyBuilds(path.join(cached, "localBuilds"), localBuilds);
  say(`restored the cached build ${cached}`);
  process.exit(0);
}
// SPARK_ENGINE_BUILD=cached: restore a cached build or keep the prebuilt binary, never compile
// (the package's install test).
if (process.env.SPARK_ENGINE_BUILD === "cached") {
  keepPrebuilt(`SPARK_ENGINE_BUILD=cached and no build cached in ${cached}`);
  process.exit(0);
}

for (const tool of ["cmake", "c++"]) {
  if (spawnSync(tool, ["--version"], { stdio: "ignore" }).status !== 0) {
    keepPrebuilt(`no ${tool} found`);
    process.exit(0);
  }
}

// `source download --skipBuild` clones the bundled llama.cpp (offline); Spark's llama.cpp changes
// are applied to that clone; `source build` builds it with the patched addon sources.
const cli = path.join(packageDir, "dist", "cli", "cli.js");
const llamaCppDir = path.join(packageDir, "llama", "llama.cpp");
if (!existsSync(path.join(llamaCppDir, "CMakeLists.txt"))) {
  say("node-llama-cpp source download (the bundled llama.cpp, offline)");
  runSource(["download", "--gpu", "false", "--skipBuild"], "cloning llama.cpp");
}
for (const diff of llamaCppPatches) applyLlamaCppPatch(diff);
say("node-llama-cpp source build (a few minutes)");
runSource(["build", "--gpu", "false"], "the build");

// node-llama-cpp names a build with custom CMake options after their hash and, at run time, looks
// for one under the plain name (no options are set then): the build takes the plain name.
const plain = `${{ linux: "linux", darwin: "mac", win32: "win" }[process.platform] ?? process.platform}-${process.arch}`;
const hashed = readdirSync(localBuilds, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && entry.name.startsWith(`${plain}-`))
  .map((entry) => path.join(localBuilds, entry.name))
  .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
if (hashed) {
  rmSync(path.join(localBuilds, plain), { recursive: true, force: true });
  renameSync(hashed, path.join(localBuilds, plain));
}

rmSync(cached, { recursive: true, force: true });
copyBuilds(localBuilds, path.join(cached, "localBuilds"));
mkdirSync(cached, { recursive: true });
cpSync(patch, path.join(cached, "done"));
say(`built and cached in ${cached}`);

/**
 * Applies the patch to node-llama-cpp's files wherever npm put the package (under this package,
 * or hoisted beside it in a project or npx's cache, where no package.json may exist yet: what
 * patch-package's own command needs). A file already patched is left as it is.
 */
function applyPatch() {
  const prefix = "node_modules/node-llama-cpp/";
  let changed = 0;
  for (const filePatch of parsePatch(readFileSync(patch, "utf8"))) {
    const name = [filePatch.newFileName, filePatch.oldFileName]
      .map((file) => file?.replace(/^[ab]\//, ""))
      .find((file) => file?.startsWith(prefix));
    if (!name)
      throw new Error(`The engine patch changes a file outside node-llama-cpp: ${filePatch.newFileName}`);
    const file = path.join(packageDir, name.slice(prefix.length));
    const current = existsSync(file) ? readFileSync(file, "utf8") : "";
    // A file the patch adds is the patch's own text; a changed file is already patched when the
    // patch reversed applies to it (checked first: an addition can apply twice).
    const added = filePatch.oldFileName === "/dev/null";
    if (
      added
        ? current === applyUnifiedPatch("", filePatch)
        : applyUnifiedPatch(current, reversePatch(filePatch)) !== false
    )
      continue;
    const patched = applyUnifiedPatch(added ? "" : current, filePatch);
    if (patched === false) {
      say(`the engine patch does not apply to ${file}: reinstall node-llama-cpp@${version}`);
      process.exit(1);
    }
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, patched);
    changed++;
  }
  if (changed > 0) say(`applied ${path.basename(patch)}`);
}

/** Runs a `node-llama-cpp source` command; where it fails, keeps the prebuilt binary. */
function runSource(args, what) {
  const run = spawnSync(process.execPath, [cli, "source", ...args], {
    stdio: "inherit",
    cwd: root,
    env: {
      ...process.env,
      ...Object.fromEntries(
        Object.entries(cmakeOptions).map(([name, value]) => [`NODE_LLAMA_CPP_CMAKE_OPTION_${name}`, value]),
      ),
    },
  });
  if (run.status !== 0) {
    keepPrebuilt(`${what} failed (exit ${run.status})`);
    process.exit(onInstall ? 0 : 1);
  }
}

/** Applies one of Spark's llama.cpp changes to the clone, unless it is applied already. */
function applyLlamaCppPatch(diff) {
  const git = (...args) =>
    spawnSync("git", ["-C", llamaCppDir, "apply", ...args, diff], { encoding: "utf8" });
  if (git("--check", "--reverse").status === 0) return;
  const applied = git();
  if (applied.status !== 0) {
    say(`${path.basename(diff)} does not apply to ${llamaCppDir}: ${applied.stderr.trim()}`);
    keepPrebuilt(`the llama.cpp change ${path.basename(diff)} did not apply`);
    process.exit(onInstall ? 0 : 1);
  }
  say(`applied ${path.basename(diff)} to llama.cpp`);
}

/** Copies each build folder (not the lock files of a build in progress). */
function copyBuilds(from, to) {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (entry.isDirectory())
      cpSync(path.join(from, entry.name), path.join(to, entry.name), { recursive: true });
  }
}
