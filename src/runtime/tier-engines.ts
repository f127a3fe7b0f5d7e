import type { ResolvedConfig, TierConfig } from "../config/spark-config.js";
import type { Engine } from "../engine/engine.js";
import { LazyEngine } from "../engine/lazy-engine.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import { UpstreamEngine } from "../engine/upstream/upstream-engine.js";
import { kvStateSettings } from "../models/kv-state-settings.js";
import type { DownloadProgress } from "../models/model-download.js";
import { resolveModel } from "../models/resolve-model.js";
import { ModelRegistry } from "../server/model-registry.js";

export interface TierChoice {
  /** The tier a session starts on. */
  defaultTier: string;
  tiers: Record<string, TierConfig>;
}

/**
 * Applies `--model` to the configured tiers. `--model NAME` naming a declared tier starts on that
 * tier; any other value keeps its old meaning, a GGUF path or hf: URI that the default tier runs on
 * the embedded engine. `--draft-model` gives the tier a session starts on a draft model.
 */
export function chooseTiers(
  config: Pick<ResolvedConfig, "defaultTier" | "tiers">,
  flags: { model?: string; contextSize?: number; draftModel?: string },
): TierChoice {
  const tiers = { ...config.tiers };
  const draft = flags.draftModel ? { draft_model: flags.draftModel } : {};
  if (flags.model && tiers[flags.model]) {
    tiers[flags.model] = { ...tiers[flags.model]!, ...draft };
    return { defaultTier: flags.model, tiers };
  }
  const name = config.defaultTier;
  let tier: TierConfig = tiers[name] ?? { engine: "llama" };
  if (flags.model)
    tier = { engine: "llama", model: flags.model, ...(tier.context ? { context: tier.context } : {}) };
  if (flags.contextSize) tier = { ...tier, context: flags.contextSize };
  tiers[name] = { ...tier, ...draft };
  return { defaultTier: name, tiers };
}

/** Makes one tier's engine; its id is the tier's name. */
export type TierLoader = (name: string, tier: TierConfig, options: TierEngineOptions) => Promise<Engine>;

export interface TierEngineOptions {
  /** Makes each tier's engine (tests pass scripted ones: see test-support/scripted-tiers.ts). Default: {@link loadTierEngine}. */
  load?: TierLoader;
  /** Where upstream tiers' `api_key_env` and the KV state cache's settings are read. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Progress of downloading and loading a llama tier's model. */
  onProgress?: (stage: "download" | "load", fraction: number) => void;
  /**
   * Resolve before the default tier has loaded: it is added still loading (requests for it wait;
   * its progress is in the registry's list). Default: false (it is loaded first).
   */
  background?: boolean;
}

/** Loads one tier's engine; its id is the tier's name. */
export async function loadTierEngine(
  name: string,
  tier: TierConfig,
  options: TierEngineOptions = {},
): Promise<Engine> {
  switch (tier.engine) {
    case "upstream": {
      const apiKey = tier.api_key_env ? (options.env ?? process.env)[tier.api_key_env] : undefined;
      return UpstreamEngine.create({
        replicas: typeof tier.url === "string" ? [tier.url] : (tier.url ?? []),
        id: name,
        ...(tier.model ? { model: tier.model } : {}),
        ...(apiKey ? { apiKey } : {}),
        ...(tier.context ? { contextSize: tier.context } : {}),
        ...(tier.first_chunk_timeout_ms ? { firstChunkTimeoutMs: tier.first_chunk_timeout_ms } : {}),
        ...(tier.idle_timeout_ms ? { idleTimeoutMs: tier.idle_timeout_ms } : {}),
      });
    }
    default: {
      const download = {
        onProgress: (p: DownloadProgress) =>
          options.onProgress?.("download", p.totalBytes ? p.receivedBytes / p.totalBytes : 0),
      };
      const resolved = await resolveModel(tier.model, download);
      const draft = tier.draft_model ? await resolveModel(tier.draft_model, download) : undefined;
      return LlamaEngine.create({
        id: name,
        modelPath: resolved.path,
        ...(draft ? { draftModelPath: draft.path } : {}),
        ...(tier.context ? { contextSize: tier.context } : {}),
        ...(tier.parallel ? { sequences: tier.parallel } : {}),
        kvStateCache: kvStateSettings({ env: options.env }),
        onLoadProgress: (fraction) => options.onProgress?.("load", fraction),
      });
    }
  }
}

/**
 * The loader of a runtime told nothing else: `startingTier` (see engine-replacement.ts) makes
 * `defaultTier`'s engine, {@link loadTierEngine} every other tier's.
 */
export function replacedTierLoader(
  defaultTier: string,
  startingTier: (name: string, tier: TierConfig) => Promise<Engine>,
): TierLoader {
  return (name, tier, options) =>
    name === defaultTier ? startingTier(name, tier) : loadTierEngine(name, tier, options);
}

/**
 * Every tier as a model of one registry (model id = tier name). The default tier is loaded before
 * this resolves (unless `background`); upstream tiers connect in the background; other llama tiers
 * load on first use.
 */
export async function tierRegistry(
  choice: TierChoice,
  options: TierEngineOptions = {},
): Promise<ModelRegistry> {
  const models = new ModelRegistry();
  const load = options.load ?? loadTierEngine;
  try {
    // Added first: the default for requests that name no model.
    const name = choice.defaultTier;
    const tier = choice.tiers[name]!;
    if (options.background) {
      const loading = load(name, tier, {
        ...options,
        onProgress: (stage, fraction) => {
          if (stage === "load") models.setProgress(name, fraction);
          options.onProgress?.(stage, fraction);
        },
      });
      models.add(name, loading, {
        engine: tier.engine,
        ...(tier.context ? { contextSize: tier.context } : {}),
      });
    } else models.add(name, await load(name, tier, options));
    for (const [name, tier] of Object.entries(choice.tiers)) {
      if (name === choice.defaultTier) continue;
      const quiet = { ...options, onProgress: undefined };
      if (tier.engine === "llama") {
        const info = { id: name, engine: "llama" as const, contextSize: tier.context ?? 32768 };
        models.add(name, new LazyEngine(info, () => load(name, tier, quiet)));
      } else models.add(name, load(name, tier, quiet));
    }
  } catch (error) {
    await models.dispose();
    throw error;
  }
  return models;
}
