import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { readFile, rename } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { SYNTHETIC_SHAPES, writeSyntheticModel } from "../synthetic/synthetic-model.js";

/**
 * llama.cpp's collection of real chat templates (`models/templates/`), from the llama.cpp source
 * node-llama-cpp bundles: its clone when the engine was built here, else read out of the bundle
 * (`llama/gitRelease.bundle`) once per machine. Nothing is downloaded and nothing is copied into
 * the repository.
 */
export function templatesDir(): string {
  const require = createRequire(import.meta.url);
  const llamaDir = path.join(path.dirname(require.resolve("node-llama-cpp")), "..", "llama");
  const cloned = path.join(llamaDir, "llama.cpp", "models", "templates");
  if (existsSync(cloned)) return cloned;
  const bundle = path.join(llamaDir, "gitRelease.bundle");
  const out = path.join(os.tmpdir(), "spark-llama-templates");
  const templates = path.join(out, "models", "templates");
  if (existsSync(templates)) return templates;
  const work = `${out}.${process.pid}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const git = (...args: string[]) => execFileSync("git", ["--git-dir", path.join(work, "git"), ...args]);
  execFileSync("git", ["init", "--quiet", "--bare", path.join(work, "git")]);
  const head = execFileSync("git", ["bundle", "list-heads", bundle]).toString().split(/\s+/)[0]!;
  git("fetch", "--quiet", bundle, head);
  const archive = git("archive", head, "models/templates");
  execFileSync("tar", ["-x", "-C", work], { input: archive });
  rmSync(path.join(work, "git"), { recursive: true, force: true });
  try {
    renameSync(work, out);
  } catch {
    rmSync(work, { recursive: true, force: true }); // another worker got there first
  }
  return templates;
}

/** A real chat template by its file name in llama.cpp's `models/templates/`. */
export function readTemplate(file: string): Promise<string> {
  return readFile(path.join(templatesDir(), file), "utf8");
}

/** The tiny synthetic model with `file`'s chat template. */
export async function tinyModelWithTemplate(file: string): Promise<string> {
  const name = `tiny-template-${file.replace(/\.jinja$/, "")}.gguf`;
  const out = path.join(os.tmpdir(), "spark-test-models", name);
  const temp = `${out}.${process.pid}.tmp`;
  mkdirSync(path.dirname(out), { recursive: true });
  await writeSyntheticModel(temp, {
    shape: SYNTHETIC_SHAPES.tiny,
    quant: "Q8_0",
    chatTemplate: await readTemplate(file),
  });
  await rename(temp, out);
  return out;
}
