import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * The repository (or installed package) root: the nearest folder above this module whose
 * package.json is Spark's. Found by walking up, so it holds from `src/` (tests) and `dist/` alike.
 */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, "package.json");
    if (existsSync(manifest)) {
      const name = (JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown }).name;
      if (name === "spark-agent") return dir;
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error("bench: cannot find Spark's package.json above this module");
    dir = parent;
  }
}

/** The built CLI, `bin/spark.js` (it runs `dist/`: build first). */
export function sparkBin(): string {
  return path.join(repoRoot(), "bin", "spark.js");
}

/** `spark` on the scripted engine: the test entry point, and the environment that asks it for the engine. */
export interface ScriptedSpark {
  /** dist-test/spark-test-bin.js: the built CLI, with the scripted engine when {@link env} asks for it. */
  bin: string;
  /** The environment asking for the scripted engine, playing `script` (a script file) at `tokensPerSecond` (0: flat out). */
  env(options: { script?: string; tokensPerSecond?: number }): NodeJS.ProcessEnv;
}

/**
 * `spark` on the scripted engine, for the scenarios that measure Spark's own cost with no model in
 * the way: the test entry point a checkout builds (`npm run build:test-bin`, which `npm test`
 * runs). The package ships no test engine, so from an install those scenarios stop with this error.
 */
export async function scriptedSpark(): Promise<ScriptedSpark> {
  const dir = path.join(repoRoot(), "dist-test");
  const bin = path.join(dir, "spark-test-bin.js");
  const engine = path.join(dir, "test-engine.js");
  if (!existsSync(bin) || !existsSync(engine)) {
    throw new Error(
      "bench: this scenario runs spark on the scripted engine, which only a Spark checkout has " +
        "(run `npm run build:test-bin` there); the installed package ships no test engine",
    );
  }
  const { testEngineEnv } = (await import(pathToFileURL(engine).href)) as {
    testEngineEnv: ScriptedSpark["env"];
  };
  return { bin, env: testEngineEnv };
}

/** `../shared/models/stories260K.gguf` beside the repository, when it is there. */
export function trainedModelPath(): string | undefined {
  const file = path.join(repoRoot(), "..", "shared", "models", "stories260K.gguf");
  return existsSync(file) ? file : undefined;
}

/**
 * SmolLM2-135M-Instruct (Q4_1), a trained chat model, where `npm run fetch:smollm2` unpacks it
 * (`$SPARK_TEST_MODELS_DIR`, default `~/.cache/spark/test-models`), when it is there.
 */
export function smollm2ModelPath(): string | undefined {
  const dir = process.env.SPARK_TEST_MODELS_DIR || path.join(os.homedir(), ".cache", "spark", "test-models");
  const file = path.join(dir, "SmolLM2-135M-Instruct.Q4_1.gguf");
  return existsSync(file) ? file : undefined;
}
