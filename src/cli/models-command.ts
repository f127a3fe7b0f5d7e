import type { Command } from "commander";
import { kvStatesUsage, removeKvStates } from "../engine/llama/kv-state-cache.js";
import { kvStateCacheDir } from "../models/kv-state-settings.js";
import { listCachedModels, modelCacheDir, removeCachedModel } from "../models/model-cache.js";
import { downloadModel } from "../models/model-download.js";
import { DEFAULT_MODEL, parseHfUri } from "../models/model-uri.js";
import { SparkError } from "../protocol/errors.js";
import { createProgressBar, formatBytes, type ProgressStream } from "../terminal/progress-bar.js";

/** Where the command writes and which cache/hub it uses; tests override, the CLI takes the defaults. */
export interface ModelsCommandIo {
  /** Default: `process.stdout`. */
  stdout?: { write(text: string): unknown };
  /** Progress and warnings. Default: `process.stderr`. */
  stderr?: ProgressStream;
  /** Default: from the environment (see `spark models --help`). */
  cacheDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Hub base URL. Default: `$SPARK_HF_ENDPOINT`, `$HF_ENDPOINT`, `https://huggingface.co`. */
  endpoint?: string;
}

const MODELS_HELP = `
Examples:
  $ spark models list                       # what is in the cache
  $ spark models pull                       # download the default model
  $ spark models pull hf:Qwen/Qwen2.5-Coder-7B-Instruct-GGUF/qwen2.5-coder-7b-instruct-q8_0.gguf
  $ spark models pull hf:bartowski/Qwen2.5-Coder-7B-Instruct-GGUF:Q4_0   # a quantization tag
  $ spark models pull hf:owner/repo/path/to/file.gguf#v1.0   # a branch, tag or commit
  $ spark models rm hf:owner/repo/file.gguf               # or a name as "spark models list" shows it
  $ spark models rm --kv-cache              # delete every saved KV state

Default model: ${DEFAULT_MODEL}

Cache directory: $SPARK_MODELS_DIR, else $SPARK_HOME/models, else $XDG_CACHE_HOME/spark/models,
else ~/.cache/spark/models, in node-llama-cpp's layout: one folder, files named after the URI
(hf_<owner>_<file>.gguf), every part of a split model beside the first; <file>.ipull is a download
to resume.
Saved KV states (pre-warmed prompt prefixes) live in <cache>/kv-states, at most
$SPARK_KV_CACHE_BYTES (default 2G; 0 turns them off); removing a model removes its states.

Environment:
  HF_TOKEN                      access token for gated or private repositories
  HF_ENDPOINT, SPARK_HF_ENDPOINT  a Hugging Face mirror to download from

Offline: run "spark models pull" on a connected machine and copy the cache directory, or skip the
cache entirely with "spark serve --model ./path/to/model.gguf".
`;

interface ListOptions {
  json?: boolean;
}

function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export function registerModelsCommand(program: Command, io: ModelsCommandIo = {}): void {
  const stdout = io.stdout ?? process.stdout;
  const stderr = io.stderr ?? process.stderr;
  const cache = { cacheDir: io.cacheDir, env: io.env };

  const models = program
    .command("models")
    .description("list, download and remove the GGUF models in Spark's cache")
    .addHelpText("after", MODELS_HELP)
    // `spark models` alone asks what there is to do: its help, on stdout, and success.
    .action(() => {
      models.outputHelp({ error: false });
    });

  models
    .command("list")
    .alias("ls")
    .description("list the models in the cache (name, size, path)")
    .option("--json", "print a JSON array of {name, path, files, bytes, mtime, partial}")
    .addHelpText("after", "\nExamples:\n  $ spark models list\n  $ spark models list --json\n")
    .action(async (options: ListOptions) => {
      const found = await listCachedModels(cache);
      if (options.json === true) {
        stdout.write(`${JSON.stringify(found, null, 2)}\n`);
        return;
      }
      const dir = modelCacheDir(cache);
      if (found.length === 0) {
        stdout.write(`No models in the cache (${dir}).\nDownload one with: spark models pull [uri]\n`);
        return;
      }
      const name = (m: (typeof found)[number]) =>
        m.partial
          ? `${m.name} (unfinished)`
          : m.files.length > 1
            ? `${m.name} (${m.files.length} parts)`
            : m.name;
      const rows = [["NAME", "SIZE", "PATH"], ...found.map((m) => [name(m), formatBytes(m.bytes), m.path])];
      const kv = await kvStatesUsage(kvStateCacheDir(cache));
      stdout.write(
        `${table(rows)}\n\nCache: ${dir}\nSaved KV states: ${kv.entries} (${formatBytes(kv.bytes)})\n`,
      );
    });

  models
    .command("pull")
    .description("download a model into the cache (resumes an interrupted download, verifies its sha256)")
    .argument("[uri]", "hf:owner/repo[:quant] or hf:owner/repo/path/to/file.gguf[#branch]", DEFAULT_MODEL)
    .option("--force", "download again even if the model is already cached")
    .addHelpText(
      "after",
      `
Prints the path of the file to load on stdout (the first part of a split model, whose parts are
all downloaded); progress goes to stderr. Press Ctrl-C to stop: the partial files are kept and the
next pull resumes them.

Examples:
  $ spark models pull
  $ spark models pull hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/qwen2.5-coder-1.5b-instruct-q4_0.gguf
  $ spark models pull hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_0
  $ HF_TOKEN=hf_xxx spark models pull hf:owner/gated-repo/model.gguf
`,
    )
    .action(async (uri: string, options: { force?: boolean }) => {
      const ref = parseHfUri(uri);
      const progress = createProgressBar(ref.name, { stream: stderr });
      const controller = new AbortController();
      const onSigint = () => controller.abort();
      process.once("SIGINT", onSigint);
      try {
        const result = await downloadModel(ref, {
          ...cache,
          endpoint: io.endpoint,
          force: options.force === true,
          signal: controller.signal,
          onProgress: (p) => progress.update(p),
          onWarning: (message) => {
            progress.finish();
            stderr.write(`spark: warning: ${message}\n`);
          },
        });
        progress.finish();
        if (result.alreadyCached)
          stderr.write(`${ref.uri} is already cached (${formatBytes(result.bytes)}).\n`);
        else if (result.verified) stderr.write(`Verified the sha256 of ${result.files.length} file(s).\n`);
        stdout.write(`${result.path}\n`);
      } finally {
        progress.finish();
        process.removeListener("SIGINT", onSigint);
      }
    });

  models
    .command("rm")
    .alias("remove")
    .description("delete models (any partial download and saved KV states of them too) from the cache")
    .argument("[model...]", "hf: URIs, or names as spark models list shows them")
    .option("--kv-cache", "delete every saved KV state (of any model, cached or local)")
    .addHelpText(
      "after",
      "\nExamples:\n  $ spark models rm hf:owner/repo/file.gguf\n  $ spark models rm hf_owner_file.gguf\n  $ spark models rm --kv-cache\n",
    )
    .action(async (specs: string[], options: { kvCache?: boolean }) => {
      if (specs.length === 0 && options.kvCache !== true) {
        throw new SparkError("invalid_request", "Name the models to remove, or pass --kv-cache.", {
          param: "uri",
        });
      }
      const kvDir = kvStateCacheDir(cache);
      const reportStates = ({ entries, bytes }: { entries: number; bytes: number }) => {
        if (entries > 0) stdout.write(`Removed ${entries} saved KV state(s) (${formatBytes(bytes)})\n`);
      };
      for (const spec of specs) {
        const model = await removeCachedModel(spec, cache);
        for (const path of model.files) stdout.write(`Removed ${path}\n`);
        reportStates(await removeKvStates(kvDir, { modelPath: model.path }));
      }
      if (options.kvCache === true) reportStates(await removeKvStates(kvDir));
    });
}
