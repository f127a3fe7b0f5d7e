#!/usr/bin/env node
// Writes patches/node-llama-cpp+<version>.patch from the files as they are under
// node_modules/node-llama-cpp, against the pristine package from the npm registry (or npm's cache).
// The files are those the patch already names plus any given as arguments (paths inside the
// package: `node scripts/write-engine-patch.mjs llama/addon/AddonModel.cpp`). A file the pristine
// package lacks is a new file. Then `npm run build:engine` builds it (its cache key is the patch's
// hash). patch-package, which wrote it before, fails to parse its own output for this package.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTwoFilesPatch } from "diff";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const packageDir = path.join(root, "node_modules", "node-llama-cpp");
const { version } = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8"));
const patchFile = path.join(root, "patches", `node-llama-cpp+${version}.patch`);
const prefix = "node_modules/node-llama-cpp/";

const named = existsSync(patchFile)
  ? [...readFileSync(patchFile, "utf8").matchAll(/^diff --git a\/(\S+)/gm)].map((m) =>
      m[1].slice(prefix.length),
    )
  : [];
const files = [...new Set([...named, ...process.argv.slice(2)])];
if (files.length === 0) {
  console.error("write-engine-patch: no files: name the package's files you changed");
  process.exit(1);
}

const temp = mkdtempSync(path.join(os.tmpdir(), "spark-engine-patch-"));
try {
  const pack = spawnSync("npm", ["pack", `node-llama-cpp@${version}`, "--silent"], {
    cwd: temp,
    encoding: "utf8",
  });
  if (pack.status !== 0) throw new Error(`npm pack node-llama-cpp@${version} failed: ${pack.stderr}`);
  const untar = spawnSync("tar", ["xzf", pack.stdout.trim()], { cwd: temp, encoding: "utf8" });
  if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr}`);

  let patch = "";
  for (const file of files) {
    const pristinePath = path.join(temp, "package", file);
    const added = !existsSync(pristinePath);
    const before = added ? "" : readFileSync(pristinePath, "utf8");
    const after = readFileSync(path.join(packageDir, file), "utf8");
    if (before === after) continue;
    const diff = createTwoFilesPatch(
      added ? "/dev/null" : `a/${prefix}${file}`,
      `b/${prefix}${file}`,
      before,
      after,
      undefined,
      undefined,
      { context: 3 },
    );
    // createTwoFilesPatch starts with an "Index:" line and a rule; git's form starts with its header.
    const body = diff.slice(diff.indexOf("\n--- ") + 1);
    patch += `diff --git a/${prefix}${file} b/${prefix}${file}\n${added ? "new file mode 100644\n" : ""}${body}`;
  }
  writeFileSync(patchFile, patch);
  console.log(
    `write-engine-patch: wrote ${path.relative(root, patchFile)} (${patch.split("\n").length - 1} lines)`,
  );
} finally {
  rmSync(temp, { recursive: true, force: true });
}
