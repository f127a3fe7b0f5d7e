import type { ResolvedConfig } from "../config/spark-config.js";
import type { Engine, EngineInfo } from "../engine/engine.js";
import { describeBackend, unusedGpuNotice } from "../engine/llama/backend-info.js";
import { probeGpu } from "../engine/llama/gpu-probe.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { kvStateSettings } from "../models/kv-state-settings.js";
import { DEFAULT_MODEL, parseModelSpec } from "../models/model-uri.js";
import { resolveModel } from "../models/resolve-model.js";
import { SparkError } from "../protocol/errors.js";
import { engineBuildNotice } from "../runtime/engine-build-notice.js";
import { engineReplacement } from "../runtime/engine-replacement.js";
import { chooseTiers, replacedTierLoader, tierRegistry } from "../runtime/tier-engines.js";
import type { ModelRegistry } from "../server/model-registry.js";
import { createProgressBar } from "../terminal/progress-bar.js";
import { StatusLine } from "../terminal/status-line.js";
import type { ServeOptions } from "./serve-options.js";
import { loadUpstreamEngine } from "./serving-flags.js";

/** What `spark serve` serves, before the server listens. */
export interface ServedModels {
  /** The model, or the default tier's; a promise while it loads behind the listening server. */
  engine: Engine | Promise<Engine>;
  /** The id it is served under: the default tier with tiers. */
  modelId: string;
  /** With tiers in a config file: every tier, a model named after it. */
  tiers?: { models: ModelRegistry; config: ResolvedConfig };
  /** The engine kind the server's admission defaults follow (tiers: llama). */
  kind: EngineInfo["engine"];
  /** What the banner says of the model: its context when ready, else that it is loading. */
  shown: string;
  /**
   * Starts loading, once the banner is out (so download and load progress print below it), with
   * its progress to `onProgress`; resolves with what is said of the model once it is ready, rejects
   * with why it cannot load. Never settles for a model ready before serving.
   */
  load(onProgress: (fraction: number) => void): Promise<string>;
}

const LOADING = "loading in the background; requests wait for it";

/**
 * The models the flags and the config ask for: with tiers in a config file, each tier a model
 * named after it, unless --model names a file or --engine another engine (then one model, as
 * without a config); an embedding entry point's engine replacement (runtime/engine-replacement.ts) in
 * place of all of it.
 */
export async function serveModels(options: ServeOptions, config: ResolvedConfig): Promise<ServedModels> {
  const replaced = engineReplacement();
  if (replaced && Object.keys(config.tiers).length > 1 && config.sources.length > 0 && !options.model) {
    // Tiers to switch among: each served as without the replacement, the default tier's engine replaced.
    const choice = chooseTiers(config, {});
    const models = await tierRegistry(choice, {
      load: replacedTierLoader(choice.defaultTier, replaced.startingTier),
    });
    const engine = models.resolve(choice.defaultTier);
    return { ...ready(engine), tiers: { models, config: { ...config, tiers: choice.tiers } } };
  }
  if (replaced) return ready(await replaced.served());
  if (options.engine === "upstream") return ready(await loadUpstreamEngine(options, options.ctxSize));
  const tiered = config.sources.length > 0 && (!options.model || config.tiers[options.model] !== undefined);
  if (tiered) {
    const choice = chooseTiers(config, {
      ...(options.model ? { model: options.model } : {}),
      ...(options.draftModel ? { draftModel: options.draftModel } : {}),
    });
    const models = await tierRegistry(choice, { background: true });
    const modelId = choice.defaultTier;
    return {
      engine: models.resolve(modelId),
      modelId,
      tiers: { models, config: { ...config, defaultTier: choice.defaultTier, tiers: choice.tiers } },
      kind: "llama",
      shown: LOADING,
      load: () => defaultTierLoaded(models, modelId),
    };
  }
  const modelId = llamaModelId(options.model, config);
  let startLoad = (_onProgress: (fraction: number) => void) => {};
  const engine = new Promise<LlamaEngine>((resolve, reject) => {
    startLoad = (onProgress) => void loadLlama(options, modelId, onProgress).then(resolve, reject);
  });
  return {
    engine,
    modelId,
    kind: "llama",
    shown: LOADING,
    load: async (onProgress) => {
      startLoad(onProgress);
      const llama = await engine;
      return `${llama.info.contextSize} tokens of context, ${describeBackend(llama.backend, llama.threads)}`;
    },
  };
}

/** A model ready before the server listens. */
function ready(engine: Engine): ServedModels {
  return {
    engine,
    modelId: engine.info.id,
    kind: engine.info.engine,
    shown: `${engine.info.contextSize} tokens of context`,
    load: () => new Promise<string>(() => {}),
  };
}

/**
 * The id a llama model is served under: the default tier's name (`fast` without a config), as the
 * in-process `spark` names the model `--model` gave it, so every face shows one name. The spec is
 * checked here, before listening.
 */
function llamaModelId(spec: string | undefined, config: Pick<ResolvedConfig, "defaultTier">): string {
  parseModelSpec(spec === undefined || spec.trim() === "" ? DEFAULT_MODEL : spec);
  return config.defaultTier;
}

/** Resolves with a description once the default tier has loaded; rejects with why it could not. */
async function defaultTierLoaded(models: ModelRegistry, id: string): Promise<string> {
  await models.settled();
  const status = models.list().find((model) => model.id === id);
  if (status?.status === "failed")
    throw new SparkError("model_not_loaded", `The model '${id}' failed to load: ${status.error}`);
  return `${models.resolve(id).info.contextSize} tokens of context`;
}

/** Downloads (when needed) and loads the llama model, with progress on stderr and to `onLoadProgress`. */
async function loadLlama(
  options: ServeOptions,
  id: string,
  onLoadProgress: (fraction: number) => void,
): Promise<LlamaEngine> {
  const label = options.model ? options.model.split("/").at(-1)! : "default model";
  const download = createProgressBar(label);
  const resolved = await resolveModel(options.model, { onProgress: (p) => download.update(p) });
  download.finish();
  let draftPath: string | undefined;
  if (options.draftModel) {
    const draftDownload = createProgressBar(options.draftModel.split("/").at(-1)!);
    const draft = await resolveModel(options.draftModel, { onProgress: (p) => draftDownload.update(p) });
    draftDownload.finish();
    draftPath = draft.path;
  }
  const loading = new StatusLine(`Loading ${resolved.path.split("/").at(-1)}`);
  const started = performance.now();
  // Beside the load: bounded (2 s per tool), and never needed before the model is ready.
  const probe = options.gpu ? probeGpu() : null;
  const engine = await LlamaEngine.create({
    id,
    modelPath: resolved.path,
    ...(draftPath ? { draftModelPath: draftPath } : {}),
    contextSize: options.ctxSize,
    sequences: options.parallel,
    threads: options.threads,
    gpu: options.gpu ? "auto" : false,
    kvStateCache: kvStateSettings(),
    onLoadProgress: (fraction) => {
      loading.update(fraction);
      onLoadProgress(fraction);
    },
  });
  const drafting = draftPath ? `, drafting with ${draftPath.split("/").at(-1)}` : "";
  const binary = `${engine.binary.build} engine binary${engine.binary.nativeLoop ? ", native decode loop" : ""}`;
  loading.done(
    `Loaded in ${((performance.now() - started) / 1000).toFixed(1)} s on ${engine.threads} threads (${binary})${drafting}`,
  );
  const buildNotice = engineBuildNotice(engine.binary, engine.backend.backend);
  if (buildNotice) process.stderr.write(`spark: ${buildNotice}\n`);
  const notice = probe && (await unusedGpuNotice(probe, engine.backend.backend));
  if (notice) process.stderr.write(`spark: ${notice}\n`);
  return engine;
}
