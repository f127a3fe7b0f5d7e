import type { HfModelRef } from "./model-uri.js";

/** The Hugging Face resolve endpoint: where a model's bytes are, and what its response headers mean. */

export const DEFAULT_HF_ENDPOINT = "https://huggingface.co";
const SHA256 = /^[0-9a-f]{64}$/;

/** An environment variable, with empty values treated as unset. */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/** `options.endpoint`, else `$SPARK_HF_ENDPOINT`, else `$HF_ENDPOINT`, else https://huggingface.co; no trailing `/`. */
export function hubEndpoint(
  options: { endpoint?: string | undefined; env?: NodeJS.ProcessEnv | undefined } = {},
): string {
  const env = options.env ?? process.env;
  const endpoint =
    options.endpoint ??
    envValue(env, "SPARK_HF_ENDPOINT") ??
    envValue(env, "HF_ENDPOINT") ??
    DEFAULT_HF_ENDPOINT;
  return endpoint.replace(/\/+$/, "");
}

/** `${endpoint}/${owner}/${repo}/resolve/${revision}/${file}`, each part URL-encoded. */
export function resolveUrl(ref: HfModelRef, endpoint: string): string {
  const file = ref.file.split("/").map(encodeURIComponent).join("/");
  return `${endpoint}/${encodeURIComponent(ref.owner)}/${encodeURIComponent(ref.repo)}/resolve/${encodeURIComponent(ref.revision)}/${file}`;
}

/** The sha256 a header carries (`"<64 hex>"`, possibly weak), or null. */
export function sha256From(value: string | null): string | null {
  if (value === null) return null;
  const hex = value.trim().replace(/^W\//, "").replace(/^"|"$/g, "").toLowerCase();
  return SHA256.test(hex) ? hex : null;
}

/** A decimal byte count header, or null. */
export function parseSize(value: string | null): number | null {
  if (value === null || !/^\d+$/.test(value.trim())) return null;
  return Number(value.trim());
}

/** `bytes start-end/total` (total may be `*`), or the unsatisfied-range form `bytes * / total` (no spaces) as a 416 answer carries. */
export function parseContentRange(
  value: string | null,
): { start: number | null; total: number | null } | null {
  const match = value?.match(/^bytes\s+(?:(\d+)-\d+|\*)\/(\d+|\*)$/);
  if (!match) return null;
  return {
    start: match[1] === undefined ? null : Number(match[1]),
    total: match[2] === "*" || match[2] === undefined ? null : Number(match[2]),
  };
}
