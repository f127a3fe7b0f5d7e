import type { PromptProgress } from "../../client-core/host-client.js";
import { promptProgressLabel } from "../../client-core/prompt-progress-label.js";
import type { ModelLoadStatus } from "./app-store.js";

/**
 * What the top bar says about the server's models: `Loading fast 43%…` while one loads,
 * `fast failed to load: …` when one could not, null when all are ready (or not known yet).
 */
export function modelLoadLabel(models: readonly ModelLoadStatus[]): string | null {
  const failed = models.find((model) => model.status === "failed");
  if (failed) return `${failed.id} failed to load${failed.error ? `: ${failed.error}` : ""}`;
  const loading = models.find((model) => model.status === "loading");
  if (!loading) return null;
  const percent = loading.progress === undefined ? "" : ` ${Math.floor(loading.progress * 100)}%`;
  return `Loading ${loading.id}${percent}…`;
}

/**
 * What the top bar says once the models are loaded while the agent prompt is evaluated:
 * `Preparing the agent prompt 45% (1,200/2,700 tokens)…`; null when it is not running.
 */
export function promptLabel(prompt: PromptProgress | null): string | null {
  if (!prompt || prompt.done) return null;
  const label = promptProgressLabel(prompt);
  return `${label.charAt(0).toUpperCase()}${label.slice(1)}…`;
}
