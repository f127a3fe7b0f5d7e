import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ProcessRun, runProcess } from "./test-support/spark-binary.js";

/**
 * The package a person installs: `npm pack` of this checkout (its dist/ as `npm test` just built
 * it), then `npm install -g` of the tarball into a fresh prefix with a fresh HOME, as from a
 * registry. Dependencies come from npm's cache where it has them (`--offline`, else
 * `--prefer-offline`); the engine's postinstall restores the build `npm ci` cached
 * (SPARK_ENGINE_CACHE) and never compiles (SPARK_ENGINE_BUILD=cached). Optional dependencies are
 * left out: they are node-llama-cpp's prebuilt binaries, CUDA's among them, which the local build
 * makes unneeded here.
 */

const repo = fileURLToPath(new URL("../..", import.meta.url));
const version = (JSON.parse(await readFile(path.join(repo, "package.json"), "utf8")) as { version: string })
  .version;
const smollm2 = path.join(
  process.env.SPARK_TEST_MODELS_DIR || path.join(os.homedir(), ".cache", "spark", "test-models"),
  "SmolLM2-135M-Instruct.Q4_1.gguf",
);
const npmCache = process.env.npm_config_cache || path.join(os.homedir(), ".npm");
const engineCache = process.env.SPARK_ENGINE_CACHE || path.join(os.homedir(), ".cache", "spark", "engine");

interface PackedFile {
  path: string;
  size: number;
}

let tmp: string;
let home: string;
let prefix: string;
let installed: string;
let packed: PackedFile[];
let tarballBytes: number;
let install: ProcessRun;
let tarball: string;

/** This process's environment without npm's and Spark's own settings, with a fresh HOME. */
function freshEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(npm_|SPARK_|XDG_)/i.test(name)) continue;
    env[name] = value;
  }
  return { ...env, HOME: home, ...extra };
}

function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<ProcessRun> {
  return runProcess("npm", args, { cwd, env, timeoutMs: 300_000 });
}

function spark(args: string[], extra: NodeJS.ProcessEnv = {}, timeoutMs = 60_000): Promise<ProcessRun> {
  const workspace = path.join(tmp, "workspace");
  return runProcess(path.join(prefix, "bin", "spark"), args, {
    cwd: workspace,
    env: freshEnv({ PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, ...extra }),
    timeoutMs,
  });
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "spark-package-"));
  home = path.join(tmp, "home");
  prefix = path.join(tmp, "prefix");
  await mkdir(home);
  await mkdir(path.join(tmp, "workspace"));
  // --ignore-scripts: `prepare` would build dist/ again, which `npm test` has just done.
  const pack = await npm(["pack", "--ignore-scripts", "--json", "--pack-destination", tmp], repo, freshEnv());
  expect(pack.code, pack.stderr).toBe(0);
  const [info] = JSON.parse(pack.stdout) as [{ filename: string; size: number; files: PackedFile[] }];
  packed = info.files;
  tarballBytes = info.size;
  tarball = path.join(tmp, info.filename);
  const installEnv = freshEnv({
    npm_config_cache: npmCache,
    SPARK_ENGINE_CACHE: engineCache,
    SPARK_ENGINE_BUILD: "cached",
    NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true",
  });
  const installArgs = (mode: string) => [
    "install",
    "--global",
    tarball,
    "--prefix",
    prefix,
    mode,
    "--omit=optional",
    "--no-audit",
    "--no-fund",
    "--foreground-scripts",
  ];
  install = await npm(installArgs("--offline"), tmp, installEnv);
  // npm ci fetches only tarballs: the registry's package documents may not be cached yet.
  if (install.code !== 0 && /ENOTCACHED/.test(install.stderr))
    install = await npm(installArgs("--prefer-offline"), tmp, installEnv);
  installed = path.join(prefix, "lib", "node_modules", "spark-agent");
}, 600_000);

afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe("the packed package", () => {
  test("holds the binary, the built code, the engine patch and its build script; no tests, test support, sources or maps", () => {
    const paths = packed.map((file) => file.path);
    process.stderr.write(
      `package: ${tarballBytes} bytes packed, ${packed.reduce((sum, file) => sum + file.size, 0)} unpacked, ${paths.length} files\n`,
    );
    expect(paths).toEqual(
      expect.arrayContaining(["bin/spark.js", "dist/cli/main.js", "scripts/build-engine.mjs"]),
    );
    expect(paths.some((file) => /^patches\/node-llama-cpp\+.+\.patch$/.test(file))).toBe(true);
    const unexpected = paths.filter(
      (file) =>
        !/^(bin|dist|patches)\//.test(file) &&
        !["package.json", "README.md", "LICENSE", "scripts/build-engine.mjs"].includes(file),
    );
    expect(unexpected).toEqual([]);
    const testOnly = paths.filter((file) =>
      /\.test\.js$|(^|\/)test-support\/|\.ts$|\.map$|test-engine|scripted-script|spark-test-bin/.test(file),
    );
    expect(testOnly).toEqual([]);
  });
});

describe("npm install -g of the tarball, in a fresh prefix and HOME", () => {
  test("installs: the engine patch applied and the cached engine build restored by its postinstall", () => {
    expect(install.code, `${install.stdout}\n${install.stderr}`).toBe(0);
    const output = `${install.stdout}${install.stderr}`;
    expect(output).toMatch(/build-engine: applied node-llama-cpp\+[\d.]+\.patch/);
    expect(output).toMatch(
      /build-engine: restored the cached build|SPARK_ENGINE_BUILD=cached and no build cached/,
    );
  });

  test("no installed code names SPARK_TEST_ENGINE: the release knows no test engine", async () => {
    const named: string[] = [];
    const walk = async (dir: string) => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) {
          if (entry.name !== "node_modules") await walk(file);
        } else if ((await readFile(file, "utf8")).includes("SPARK_TEST_ENGINE")) named.push(file);
      }
    };
    for (const code of ["bin", "dist", "scripts"]) await walk(path.join(installed, code));
    expect(named).toEqual([]);
  });

  test("spark --version, --help and doctor answer", async () => {
    const versionRun = await spark(["--version"]);
    expect(versionRun.code, versionRun.stderr).toBe(0);
    expect(versionRun.stdout.trim()).toBe(version);
    const help = await spark(["--help"]);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: spark /m);
    const doctor = await spark(["doctor"]);
    expect(doctor.code, doctor.stderr).toBe(0);
    expect(doctor.stdout).toMatch(/^Backend {4}cpu/m);
  });

  test("the shipped spark ignores SPARK_TEST_ENGINE: a model that is not there is still missing", async () => {
    const run = await spark(["exec", "--no-attach", "--model", path.join(tmp, "missing.gguf"), "hi"], {
      SPARK_TEST_ENGINE: "{}",
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Model file not found/);
    expect(run.stdout).not.toMatch(/You said/);
  });

  test("spark exec answers on a local GGUF (SmolLM2-135M-Instruct)", async (context) => {
    if (!existsSync(smollm2)) {
      process.stderr.write(`skipped: no ${smollm2} (npm run fetch:smollm2 fetches it)\n`);
      context.skip();
    }
    if (!/restored the cached build/.test(`${install.stdout}${install.stderr}`)) {
      process.stderr.write("skipped: no cached engine build to restore (npm ci builds and caches it)\n");
      context.skip();
    }
    const run = await spark(
      ["exec", "--no-attach", "--model", smollm2, "--max-output-tokens", "40", "Say hello."],
      {},
      240_000,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().length).toBeGreaterThan(0);
  }, 300_000);

  test("npx -y <package> acp starts the ACP agent: an editor's initialize is answered with Spark's auth method", async () => {
    // As an editor (or the ACP registry) launches it: npx installs the package into its own cache,
    // with node-llama-cpp hoisted beside it and no package.json above (the engine patch applies there too).
    const child = spawn(
      "npx",
      ["--yes", "--prefer-offline", "--omit=optional", `--package=${tarball}`, "--", "spark", "acp"],
      {
        cwd: path.join(tmp, "workspace"),
        env: freshEnv({
          npm_config_cache: npmCache,
          SPARK_ENGINE_CACHE: engineCache,
          SPARK_ENGINE_BUILD: "cached",
          NODE_LLAMA_CPP_SKIP_DOWNLOAD: "true",
        }),
        stdio: ["pipe", "pipe", "pipe"],
        timeout: 300_000,
        killSignal: "SIGKILL",
      },
    );
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const answered = new Promise<string>((resolve) => {
      child.stdout.on("data", (chunk) => {
        stdout += chunk;
        if (stdout.includes("\n")) resolve(stdout.split("\n")[0]!);
      });
      child.once("close", () => resolve(stdout));
    });
    const closed = new Promise<number | null>((resolve) => child.once("close", resolve));
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } })}\n`,
    );
    const line = await answered;
    child.stdin.end();
    const code = await closed;
    expect(line, stderr).not.toBe("");
    const reply = JSON.parse(line) as {
      id: number;
      result: { agentInfo: { name: string }; authMethods: { id: string }[] };
    };
    expect(reply.id).toBe(1);
    expect(reply.result.agentInfo.name).toBe("spark");
    expect(reply.result.authMethods.map((m) => m.id)).toEqual(["spark-local"]);
    expect(code, stderr).toBe(0);
  }, 360_000);

  test("without a compiler the engine step still succeeds, saying what Spark runs on and how to get the fast engine", async () => {
    const script = path.join(installed, "scripts", "build-engine.mjs");
    const emptyCache = await mkdtemp(path.join(tmp, "engine-cache-"));
    const run = (extra: NodeJS.ProcessEnv) =>
      runProcess(process.execPath, [script, "--install"], {
        cwd: installed,
        // Only node on PATH: no cmake, no c++.
        env: freshEnv({ PATH: path.dirname(process.execPath), SPARK_ENGINE_CACHE: emptyCache, ...extra }),
        timeoutMs: 60_000,
      });
    const advice = new RegExp(
      "Spark runs on node-llama-cpp's prebuilt binary .* install cmake and a C\\+\\+ compiler, then run: " +
        `node "${script.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"`,
    );
    // The patch is on already: running the step again changes no file (an added file once doubled).
    const patchedFile = path.join(packageDirOf(installed), "llama", "addon", "AddonContextGenerate.cpp");
    const before = await readFile(patchedFile, "utf8");
    const noCompiler = await run({});
    expect(await readFile(patchedFile, "utf8")).toBe(before);
    expect(noCompiler.code, noCompiler.stderr).toBe(0);
    expect(noCompiler.stderr).toMatch(/no cmake found/);
    expect(noCompiler.stderr.match(/build-engine: /g)).toHaveLength(1);
    expect(noCompiler.stderr).toMatch(advice);
    const skipped = await run({ SPARK_ENGINE_BUILD: "0" });
    expect(skipped.code, skipped.stderr).toBe(0);
    expect(skipped.stderr).toMatch(/SPARK_ENGINE_BUILD=0: /);
    expect(skipped.stderr).toMatch(advice);
  });
});

/** Where npm put node-llama-cpp for the installed package: under it (a global install), or beside it. */
function packageDirOf(installed: string): string {
  const nested = path.join(installed, "node_modules", "node-llama-cpp");
  return existsSync(nested) ? nested : path.join(path.dirname(installed), "node-llama-cpp");
}
