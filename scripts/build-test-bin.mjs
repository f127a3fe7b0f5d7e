#!/usr/bin/env node
// Bundles the test entry point (src/cli/test-support/spark-test-bin.ts: bin/spark.js with the
// scripted engine SPARK_TEST_ENGINE asks for) into dist-test/spark-test-bin.js, and the module that
// writes that variable (test-engine.ts) into dist-test/test-engine.js, for the bench's scripted
// servers when it runs from a checkout. Test support is
// bundled in; every production module stays an import of its built copy in dist/ (build that first:
// `npm run build`), so the entry point shares those modules with bin/spark.js and dist/ itself holds
// no test support. `npm test` runs it; the tests' helper (spark-binary.ts) runs it when the bundle is
// missing or older than its sources.
//
//   npm run build:test-bin
import { readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const src = path.join(root, "src");
const testSupport = path.join(src, "cli", "test-support");
const outDir = path.join(root, "dist-test");
const entries = {
  "spark-test-bin": path.join(testSupport, "spark-test-bin.ts"),
  "test-engine": path.join(testSupport, "test-engine.ts"),
};
/** The test entry point, once built. */
export const testBinPath = path.join(outDir, "spark-test-bin.js");
const inputsFile = path.join(outDir, "inputs.json");

/** Builds the test entry point; returns its path. */
export async function buildTestBin() {
  const { build } = await import("esbuild");
  // Several test processes may build at once: each writes its own files and renames them into place.
  const temporary = path.join(outDir, `.build-${process.pid}-${Date.now()}`);
  const result = await build({
    entryPoints: entries,
    outdir: temporary,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    packages: "external",
    metafile: true,
    logLevel: "error",
    plugins: [
      {
        name: "production-modules-from-dist",
        setup(on) {
          on.onResolve({ filter: /^\.\.?\// }, (args) => {
            const file = path.resolve(args.resolveDir, args.path);
            const inSrc = path.relative(src, file);
            if (!inSrc.startsWith("..") && inSrc.split(path.sep).includes("test-support")) return undefined;
            const target = inSrc.startsWith("..") ? file : path.join(root, "dist", inSrc);
            return { path: toImport(path.relative(outDir, target)), external: true };
          });
        },
      },
    ],
  });
  const inputs = Object.keys(result.metafile.inputs).map((input) => path.resolve(root, input));
  for (const name of Object.keys(entries))
    await rename(path.join(temporary, `${name}.js`), path.join(outDir, `${name}.js`));
  await writeFile(path.join(temporary, "inputs.json"), JSON.stringify(inputs));
  await rename(path.join(temporary, "inputs.json"), inputsFile);
  await rm(temporary, { recursive: true, force: true });
  return testBinPath;
}

/** The test entry point, built first when it is missing or older than one of its sources. */
export async function ensureTestBin() {
  try {
    const built = (await stat(testBinPath)).mtimeMs;
    const inputs = JSON.parse(await readFile(inputsFile, "utf8"));
    const times = await Promise.all(inputs.map(async (input) => (await stat(input)).mtimeMs));
    if (times.every((time) => time <= built)) return testBinPath;
  } catch {
    // Not built yet, or a source moved: build.
  }
  return buildTestBin();
}

function toImport(relative) {
  const posix = relative.split(path.sep).join("/");
  return posix.startsWith(".") ? posix : `./${posix}`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stdout.write(`${path.relative(root, await buildTestBin())}\n`);
}
