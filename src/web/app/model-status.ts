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
