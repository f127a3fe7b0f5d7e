import { SparkError } from "../protocol/errors.js";
import { type HfModelRef, parseHfUri } from "./model-uri.js";

/**
 * What the Hugging Face hub publishes for a model before it is downloaded: which files make it up
 * (every part of a split GGUF) and each file's sha256. node-llama-cpp downloads the files; this is
 * what Spark checks them against, and the first contact with the hub, so an unreachable hub fails
 * at once with the offline advice instead of inside the downloader's retries.
 */

export interface HubOptions {
  /** Hub base URL, without a trailing `/`. */
  endpoint: string;
  /** Bearer token for gated and private repositories. */
  token?: string | undefined;
  signal?: AbortSignal | undefined;
  /** Give up on a request that has not answered for this long. Default: 30 000 ms. */
  timeoutMs?: number | undefined;
}

export interface PublishedFile {
  /** Path of the file inside the repository. */
  file: string;
  /** The sha256 the hub publishes for it (hex), or null when it publishes none. */
  sha256: string | null;
}

const SPLIT_PART = /-(\d{5})-of-(\d{5})\.gguf$/;
const SHA256 = /^[0-9a-f]{64}$/;

/** Every part of a split GGUF (`name-00001-of-00003.gguf`) in order, or just the file itself. */
export function splitParts(file: string): string[] {
  const match = SPLIT_PART.exec(file);
  const parts = Number(match?.[2]);
  if (match === null || Number(match[1]) < 1 || Number(match[1]) > parts) return [file];
  const stem = file.slice(0, match.index);
  return Array.from(
    { length: parts },
    (_, i) => `${stem}-${String(i + 1).padStart(5, "0")}-of-${match[2]}.gguf`,
  );
}

/** The lines every "cannot download" error ends with: how to run Spark without the network. */
export function offlineHint(cacheDir: string): string {
  return [
    "Spark works offline with a local GGUF file: spark serve --model /path/to/file.gguf",
    `Models already downloaded are listed by: spark models list (cache: ${cacheDir})`,
    'Or run "spark models pull <uri>" on a connected machine and copy its cache directory here.',
  ].join("\n");
}

function networkReason(error: unknown, host: string): string {
  if (error instanceof Error && error.name === "TimeoutError") return `${host} did not answer`;
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === "string") return `cannot reach ${host} (${code})`;
    current = current.cause;
  }
  return `cannot reach ${host} (${error instanceof Error ? error.message : String(error)})`;
}

/** One request to the hub; a transport failure becomes `model_unavailable` with the offline advice. */
async function hubFetch(
  url: string,
  init: RequestInit,
  options: HubOptions & { cacheDir: string; uri: string },
): Promise<Response> {
  const signals = [
    AbortSignal.timeout(options.timeoutMs ?? 30_000),
    ...(options.signal ? [options.signal] : []),
  ];
  const headers: Record<string, string> = { "User-Agent": "llama-cpp" }; // the manifest API answers GGUF details to llama.cpp
  if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
  try {
    return await fetch(url, { ...init, headers, signal: AbortSignal.any(signals) });
  } catch (error) {
    if (options.signal?.aborted) throw new SparkError("cancelled", `Download of ${options.uri} cancelled.`);
    throw new SparkError(
      "model_unavailable",
      `Could not download model ${options.uri}: ${networkReason(error, new URL(url).host)}.\n` +
        offlineHint(options.cacheDir),
      { cause: error },
    );
  }
}

/** The error for a hub answer other than success, using its `X-Error-Code` when present. */
function hubError(
  ref: HfModelRef,
  file: string | undefined,
  response: Response,
  options: HubOptions,
): SparkError {
  const repoUrl = `${options.endpoint}/${ref.owner}/${ref.repo}`;
  const hubCode = response.headers.get("x-error-code");
  const status = response.status;
  const tokenHelp =
    options.token === undefined
      ? "set HF_TOKEN to a Hugging Face access token (https://huggingface.co/settings/tokens)"
      : "HF_TOKEN is set but does not grant access to it";
  if (hubCode === "GatedRepo" || (status === 403 && hubCode !== "RepoNotFound")) {
    return new SparkError(
      "download_failed",
      `Model ${ref.uri} is gated or private (HTTP ${status}): accept its terms at ${repoUrl} while signed in, then ${tokenHelp}.`,
    );
  }
  if (hubCode === "RepoNotFound" || status === 401) {
    return new SparkError(
      hubCode === "RepoNotFound" ? "model_not_found" : "download_failed",
      `Repository ${ref.owner}/${ref.repo} was not found or needs authentication (HTTP ${status}). ` +
        `Check the name at ${repoUrl}; for a private or gated model, ${tokenHelp}.`,
    );
  }
  if (status === 404 || status === 400) {
    const what = file === undefined ? `No GGUF for "${ref.tag ?? "latest"}"` : `File "${file}" was not found`;
    return new SparkError(
      "model_not_found",
      `${what} in ${ref.owner}/${ref.repo} at "${ref.branch}" (HTTP ${status}). Check the name at ${repoUrl}/tree/${ref.branch}`,
    );
  }
  return new SparkError(
    "download_failed",
    `Could not download model ${ref.uri}: HTTP ${status} ${response.statusText} from ${new URL(response.url || options.endpoint).host}.` +
      (status >= 500 ? " The hub had an internal error; try again later." : ""),
  );
}

/** A manifest is a few KiB; a hub that sends more is not read past this. */
const MANIFEST_MAX_BYTES = 1024 * 1024;

/** The body as JSON, or null when it is not JSON or longer than `maxBytes` (read no further). */
async function boundedJson(response: Response, maxBytes: number): Promise<unknown> {
  const reader = response.body?.getReader();
  if (!reader) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return null;
  }
}

/** The file the hub picks for `hf:owner/repo[:tag]`, from the manifest llama.cpp reads too. */
async function manifestFile(ref: HfModelRef, options: HubOptions & { cacheDir: string }): Promise<string> {
  const url = `${options.endpoint}/v2/${ref.owner}/${ref.repo}/manifests/${ref.tag ?? "latest"}`;
  const response = await hubFetch(url, {}, { ...options, uri: ref.uri });
  if (!response.ok) {
    await response.body?.cancel();
    throw hubError(ref, undefined, response, options);
  }
  const manifest = (await boundedJson(response, MANIFEST_MAX_BYTES)) as {
    ggufFile?: { rfilename?: unknown };
  } | null;
  const file = manifest?.ggufFile?.rfilename;
  if (typeof file !== "string") {
    throw new SparkError(
      "download_failed",
      `The hub's manifest for ${ref.uri} names no GGUF file (or is not JSON of at most ${MANIFEST_MAX_BYTES / 1024 / 1024} MiB).`,
    );
  }
  return parseHfUri(`hf:${ref.owner}/${ref.repo}/${file}`).file!; // checks the path like any URI's
}

/**
 * The sha256 of one file. The hub answers the resolve URL of an LFS file with a redirect to its CDN
 * carrying `X-Linked-Etag: "<sha256>"`; fetch would follow it and hide the header, hence
 * `redirect: "manual"`. Same-origin redirects (renamed repositories) are followed by hand.
 */
async function publishedSha256(
  ref: HfModelRef,
  file: string,
  options: HubOptions & { cacheDir: string },
): Promise<string | null> {
  const path = [ref.owner, ref.repo, "resolve", ref.branch, ...file.split("/")].map(encodeURIComponent);
  let url = `${options.endpoint}/${path.join("/")}`;
  for (let hop = 0; hop < 5; hop++) {
    const response = await hubFetch(
      url,
      { method: "HEAD", redirect: "manual" },
      { ...options, uri: ref.uri },
    );
    await response.body?.cancel();
    if (response.status >= 400) throw hubError(ref, file, response, options);
    const etag = (response.headers.get("x-linked-etag") ?? response.headers.get("etag") ?? "")
      .replace(/^W\//, "")
      .replace(/"/g, "")
      .toLowerCase();
    if (SHA256.test(etag)) return etag;
    const location = response.headers.get("location");
    if (location === null || new URL(location, url).origin !== new URL(url).origin) return null;
    url = new URL(location, url).href;
  }
  return null;
}

/** The files of a model as the hub publishes them: every part of a split GGUF, each with its sha256. */
export async function publishedFiles(
  ref: HfModelRef,
  options: HubOptions & { cacheDir: string },
): Promise<PublishedFile[]> {
  const first = ref.file ?? (await manifestFile(ref, options));
  const files: PublishedFile[] = [];
  // One at a time: the part count comes from the hub's file name.
  for (const file of splitParts(first))
    files.push({ file, sha256: await publishedSha256(ref, file, options) });
  return files;
}
