import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { stat, unlink } from "node:fs/promises";
import { createModelDownloader, type ModelDownloader } from "node-llama-cpp";
import { SparkError } from "../protocol/errors.js";
import { type HubOptions, offlineHint, type PublishedFile, publishedFiles } from "./hub-files.js";
import { envValue, findCachedModel, type ModelCacheOptions, modelCacheDir } from "./model-cache.js";
import { type HfModelRef, parseHfUri } from "./model-uri.js";

/**
 * Downloads `hf:` models into the cache with node-llama-cpp's downloader (every part of a split GGUF,
 * `:quant` tags, resumed after an interruption) and checks each file against the sha256 the hub
 * publishes. Tests point `endpoint` at a local server; nothing here assumes the host.
 */

export interface DownloadProgress {
  /** Bytes of the model so far, all files together. */
  receivedBytes: number;
  /** The model's full size, when known. */
  totalBytes: number | null;
  /** Recent transfer rate (bytes per second); 0 until measurable. */
  bytesPerSecond: number;
}

export interface DownloadModelOptions extends ModelCacheOptions {
  /** Aborting keeps the unfinished files, so the next download resumes them. */
  signal?: AbortSignal | undefined;
  onProgress?: ((progress: DownloadProgress) => void) | undefined;
  /** Non-fatal problems, e.g. no checksum published so a file could not be verified. */
  onWarning?: ((message: string) => void) | undefined;
  /** Hub base URL. Default: `$SPARK_HF_ENDPOINT`, `$HF_ENDPOINT`, `https://huggingface.co`. */
  endpoint?: string | undefined;
  /** Access token for gated/private repositories. Default: `$HF_TOKEN`. */
  token?: string | undefined;
  /** Give up on a hub request that has not answered for this long. Default: 30 000 ms. */
  timeoutMs?: number | undefined;
  /** Download even when the model is already cached. Default: false. */
  force?: boolean | undefined;
}

export interface DownloadResult {
  uri: string;
  /** The file to load (the first part of a split model). */
  path: string;
  /** Every file of the model. */
  files: string[];
  bytes: number;
  /** True when every file's sha256 matched the one the hub published. */
  verified: boolean;
  alreadyCached: boolean;
}

function hubOptions(options: DownloadModelOptions): HubOptions {
  const env = options.env ?? process.env;
  const endpoint =
    options.endpoint ??
    envValue(env, "SPARK_HF_ENDPOINT") ??
    envValue(env, "HF_ENDPOINT") ??
    "https://huggingface.co";
  return {
    endpoint: endpoint.replace(/\/+$/, ""),
    token: options.token ?? envValue(env, "HF_TOKEN"),
    signal: options.signal,
    timeoutMs: options.timeoutMs,
  };
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/**
 * Waits for a stopped download to close, then deletes any file of it that is in place but not
 * whole: a cancel racing the end of a transfer can leave the progress file renamed into place with
 * its bookkeeping still appended, and it would pass as cached. Unfinished `.ipull` files stay.
 */
async function discardUnfinished(downloader: ModelDownloader | undefined): Promise<void> {
  if (downloader === undefined) return;
  await downloader.cancel({ deleteTempFile: false }).catch(() => undefined);
  for (const { filePath, totalSize } of downloader.filesInfo) {
    const found = await stat(filePath).catch(() => null);
    if (found !== null && found.size !== totalSize) await unlink(filePath);
  }
}

/**
 * Downloads an `hf:` model into the cache (returning at once when it is already there). Failures
 * are SparkErrors: `model_unavailable` (hub unreachable), `model_not_found`, `download_failed`,
 * `checksum_mismatch` (a file came back corrupt twice; it is deleted), `cancelled`.
 */
export async function downloadModel(
  uri: string | HfModelRef,
  options: DownloadModelOptions = {},
): Promise<DownloadResult> {
  const ref = typeof uri === "string" ? parseHfUri(uri) : uri;
  if (options.force !== true) {
    const cached = await findCachedModel(ref, options);
    if (cached !== null) {
      const { path, files, bytes } = cached;
      return { uri: ref.uri, path, files, bytes, verified: false, alreadyCached: true };
    }
  }
  const cacheDir = modelCacheDir(options);
  const hub = hubOptions(options);
  const published = await publishedFiles(ref, { ...hub, cacheDir });
  // A file that fails its checksum is deleted and downloaded once more before that is an error: a
  // transfer can come back corrupt without an error (seen once in a test run; ipull writes its
  // progress bookkeeping into the file it downloads, see discardUnfinished).
  for (let attempt = 1; ; attempt++) {
    const downloader = await download(ref, options, hub, cacheDir);
    const files = downloader.filesInfo.map((info) => info.filePath);
    if (files.length !== published.length) {
      throw new SparkError(
        "download_failed",
        `Download of ${ref.uri} gave ${files.length} file(s), but the hub publishes ${published.length}.`,
      );
    }
    const corrupt = await firstCorrupt(files, published, options);
    if (corrupt === undefined) {
      return {
        uri: ref.uri,
        path: downloader.entrypointFilePath,
        files,
        bytes: downloader.totalSize,
        verified: published.every((p) => p.sha256 !== null),
        alreadyCached: false,
      };
    }
    const message = `Downloaded ${corrupt.file} of ${ref.uri} is corrupt: its sha256 is ${corrupt.actual} but the hub published ${corrupt.expected}.`;
    if (attempt === 2) {
      throw new SparkError("checksum_mismatch", `${message} The file was deleted; run the download again.`);
    }
    options.onWarning?.(`${message} It was deleted; downloading it again.`);
  }
}

/** One run of node-llama-cpp's downloader over the model's files (whole ones are skipped). */
async function download(
  ref: HfModelRef,
  options: DownloadModelOptions,
  hub: HubOptions,
  cacheDir: string,
): Promise<ModelDownloader> {
  let downloader: ModelDownloader | undefined;
  try {
    downloader = await createModelDownloader({
      modelUri: ref.uri,
      dirPath: cacheDir,
      endpoints: { huggingFace: `${hub.endpoint}/` },
      ...(hub.token === undefined ? {} : { tokens: { huggingFace: hub.token } }),
      skipExisting: options.force !== true,
      deleteTempFileOnCancel: false,
      onProgress: (p) =>
        options.onProgress?.({
          receivedBytes: p.downloadedSize,
          totalBytes: p.totalSize > 0 ? p.totalSize : null,
          bytesPerSecond: p.averageSpeed,
        }),
    });
    await downloader.download({ signal: options.signal });
    options.signal?.throwIfAborted(); // a cancelled download resolves
    return downloader;
  } catch (error) {
    await discardUnfinished(downloader);
    if (options.signal?.aborted) {
      throw new SparkError("cancelled", `Download of ${ref.uri} cancelled; the next download resumes it.`, {
        cause: error,
      });
    }
    const reason = error instanceof Error ? error.message : String(error);
    throw new SparkError(
      "download_failed",
      `Download of ${ref.uri} failed: ${reason}\n${offlineHint(cacheDir)}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * The first file whose sha256 is not the one the hub published, deleted; files the hub published
 * no sha256 for pass with a warning.
 */
async function firstCorrupt(
  files: string[],
  published: PublishedFile[],
  options: DownloadModelOptions,
): Promise<{ file: string; actual: string; expected: string } | undefined> {
  for (const [i, file] of files.entries()) {
    const expected = published[i]!.sha256;
    if (expected === null) {
      options.onWarning?.(`The hub published no sha256 for ${published[i]!.file}; it was not verified.`);
      continue;
    }
    const actual = await sha256File(file);
    if (actual !== expected) {
      await unlink(file);
      return { file: published[i]!.file, actual, expected };
    }
  }
  return undefined;
}
