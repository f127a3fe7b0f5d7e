import { createHash, type Hash } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, rename, stat, unlink } from "node:fs/promises";
import { dirname } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { SparkError } from "../protocol/errors.js";
import {
  Cancelled,
  type DownloadErrorContext,
  finalError,
  hostOf,
  httpError,
  NetworkFailure,
  networkReason,
} from "./download-errors.js";
import { envValue, hubEndpoint, parseContentRange, parseSize, resolveUrl, sha256From } from "./hub-http.js";
import {
  cachedPath,
  findCachedModel,
  type ModelCacheOptions,
  modelCacheDir,
  partialPath,
  pruneEmptyDirs,
} from "./model-cache.js";
import { type HfModelRef, parseHfUri } from "./model-uri.js";

/**
 * Downloads `hf:` models into the cache with resume, sha256 verification and one clear error when
 * the hub cannot be reached. Tests point `endpoint` at a local server; nothing here assumes the host.
 */

export interface DownloadProgress {
  /** Bytes in the file so far, including a resumed prefix. */
  receivedBytes: number;
  /** The file's full size, when the server said. */
  totalBytes: number | null;
  /** Recent transfer rate (bytes per second); 0 until measurable. */
  bytesPerSecond: number;
}

export interface DownloadModelOptions extends ModelCacheOptions {
  /** Aborting leaves the `.part` file so the next download resumes it. */
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
  /** Non-fatal problems, e.g. no checksum published so the file could not be verified. */
  onWarning?: (message: string) => void;
  /** Hub base URL. Default: `$SPARK_HF_ENDPOINT`, `$HF_ENDPOINT`, `https://huggingface.co`. */
  endpoint?: string;
  /** Access token for gated/private repositories. Default: `$HF_TOKEN`. */
  token?: string;
  /** Give up when no response or no bytes arrive for this long. Default: 30 000 ms. */
  stallTimeoutMs?: number;
  /** Automatic resumes after a connection drops mid-transfer (only while bytes keep arriving). Default: 3. */
  retries?: number;
  /** Pause before an automatic resume. Default: 1 000 ms. */
  retryDelayMs?: number;
  /** Download even when the model is already cached. Default: false. */
  force?: boolean;
}

export interface DownloadResult {
  uri: string;
  path: string;
  bytes: number;
  /** sha256 of the file (hex); null when it was already cached and not re-read. */
  sha256: string | null;
  /** True when the sha256 matched the one the hub published. */
  verified: boolean;
  /** True when a previous partial download was continued. */
  resumed: boolean;
  alreadyCached: boolean;
}

const DEFAULT_STALL_TIMEOUT_MS = 30_000;
const GGUF_MAGIC = Buffer.from("GGUF", "latin1");

interface Context extends DownloadErrorContext {
  headers: Record<string, string>;
  finalPath: string;
  options: DownloadModelOptions;
  stallTimeoutMs: number;
}

interface Metadata {
  sha256: string | null;
  size: number | null;
}

function formatMB(bytes: number): string {
  return `${(bytes / 1e6).toFixed(1)} MB`;
}

/** Resets on every byte; aborts the transfer when nothing arrives for `ms`. */
class StallTimer {
  readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly ms: number) {}
  arm(): void {
    // unref: a pending stall timer must never keep the process alive after the work is over.
    if (this.timer === undefined) this.timer = setTimeout(() => this.controller.abort(), this.ms).unref();
    else this.timer.refresh();
  }
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
  get stalled(): boolean {
    return this.controller.signal.aborted;
  }
}

/** Transfer rate over the last few seconds. */
class RateMeter {
  private samples: Array<{ at: number; bytes: number }> = [];
  sample(bytes: number): number {
    const at = performance.now();
    const last = this.samples.at(-1);
    if (last === undefined || at - last.at >= 100) this.samples.push({ at, bytes });
    while (this.samples.length > 2 && at - this.samples[0]!.at > 5_000) this.samples.shift();
    const first = this.samples[0]!;
    const elapsed = at - first.at;
    return elapsed > 0 ? Math.max(0, ((bytes - first.bytes) * 1000) / elapsed) : 0;
  }
  reset(): void {
    this.samples = [];
  }
}

/** Runs `fetch` under the stall timer and the caller's signal, turning failures into typed errors. */
async function guardedFetch(
  ctx: Context,
  stall: StallTimer,
  url: string,
  init: RequestInit,
): Promise<Response> {
  const signals = [stall.controller.signal, ...(ctx.options.signal ? [ctx.options.signal] : [])];
  stall.arm();
  try {
    return await fetch(url, { ...init, signal: AbortSignal.any(signals) });
  } catch (error) {
    const failure = transportError(ctx, stall, error, false);
    stall.clear();
    throw failure;
  }
}

function transportError(ctx: Context, stall: StallTimer, error: unknown, progressed: boolean): Error {
  if (ctx.options.signal?.aborted) return new Cancelled({ cause: error });
  const host = hostOf(ctx.url);
  if (stall.stalled) {
    return new NetworkFailure(`no data from ${host} for ${ctx.stallTimeoutMs / 1000} s`, progressed, error);
  }
  const reason = networkReason(error, host);
  if (reason !== null) return new NetworkFailure(reason, progressed, error);
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Reads the checksum and size before downloading. Hugging Face answers the resolve URL of an LFS
 * file with a redirect to its CDN carrying `X-Linked-Etag: "<sha256>"` and `X-Linked-Size`; fetch
 * would follow that redirect and hide them, hence `redirect: "manual"`. Same-origin redirects
 * (renamed repositories) are followed by hand; the CDN is not contacted.
 */
async function fetchMetadata(ctx: Context, stall: StallTimer): Promise<Metadata> {
  let url = ctx.url;
  let sha256: string | null = null;
  let size: number | null = null;
  for (let hop = 0; hop < 5; hop++) {
    const response = await guardedFetch(ctx, stall, url, {
      method: "HEAD",
      redirect: "manual",
      headers: ctx.headers,
    });
    stall.clear();
    await response.body?.cancel();
    if ([401, 403, 404].includes(response.status)) throw httpError(ctx, response);
    const headers = response.headers;
    sha256 ??= sha256From(headers.get("x-linked-etag")) ?? sha256From(headers.get("etag"));
    size ??= parseSize(headers.get("x-linked-size"));
    const location = headers.get("location");
    if (response.status >= 300 && response.status < 400 && location !== null && sha256 === null) {
      const next = new URL(location, url);
      if (next.origin !== new URL(url).origin) break;
      url = next.href;
      continue;
    }
    if (response.ok) size ??= parseSize(headers.get("content-length"));
    break;
  }
  return { sha256, size };
}

async function partSize(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

async function removeFile(path: string): Promise<void> {
  await unlink(path).catch(() => undefined);
}

async function hashPrefix(path: string, hash: Hash, bytes: number): Promise<void> {
  for await (const chunk of createReadStream(path, { start: 0, end: bytes - 1 }))
    hash.update(chunk as Buffer);
}

interface Transfer {
  hash: Hash;
  bytes: number;
  resumed: boolean;
}

/** One GET, appending to `.part` (206) or rewriting it (200). Resolves when the file is complete. */
async function transfer(
  ctx: Context,
  meta: Metadata,
  stall: StallTimer,
  meter: RateMeter,
  allowRestart = true,
): Promise<Transfer> {
  let offset = await partSize(ctx.partPath);
  if (meta.size !== null && offset > meta.size) {
    await removeFile(ctx.partPath);
    offset = 0;
  }
  let hash = createHash("sha256");
  if (offset > 0) await hashPrefix(ctx.partPath, hash, offset);
  const report = (bytes: number, total: number | null) =>
    ctx.options.onProgress?.({
      receivedBytes: bytes,
      totalBytes: total,
      bytesPerSecond: meter.sample(bytes),
    });
  if (meta.size !== null && offset === meta.size && offset > 0) {
    report(offset, meta.size);
    return { hash, bytes: offset, resumed: true };
  }

  const headers = { ...ctx.headers, ...(offset > 0 ? { Range: `bytes=${offset}-` } : {}) };
  const response = await guardedFetch(ctx, stall, ctx.url, { method: "GET", redirect: "follow", headers });
  meta.sha256 ??= sha256From(response.headers.get("x-linked-etag"));
  const range = parseContentRange(response.headers.get("content-range"));
  const restart = async (): Promise<Transfer> => {
    stall.clear();
    await response.body?.cancel().catch(() => undefined);
    await removeFile(ctx.partPath);
    if (!allowRestart)
      throw new NetworkFailure("the server's ranges do not match the partial download", false);
    return transfer(ctx, meta, stall, meter, false);
  };
  if (response.status === 416 && offset > 0) {
    if (range?.total === offset) {
      stall.clear();
      await response.body?.cancel();
      report(offset, offset);
      return { hash, bytes: offset, resumed: true };
    }
    return restart();
  }
  if (!response.ok) {
    stall.clear();
    await response.body?.cancel().catch(() => undefined);
    throw httpError(ctx, response);
  }
  const append = response.status === 206 && offset > 0;
  if (response.status === 206 && range?.start !== offset) return restart();
  if (!append) {
    offset = 0;
    hash = createHash("sha256");
  }
  const length = parseSize(response.headers.get("content-length"));
  const total = range?.total ?? (length === null ? null : offset + length) ?? meta.size;
  const resumed = append;

  await mkdir(dirname(ctx.partPath), { recursive: true });
  const file = await open(ctx.partPath, append ? "a" : "w");
  let receivedThisAttempt = 0;
  try {
    report(offset, total);
    const reader = response.body?.getReader();
    for (;;) {
      let chunk: Awaited<ReturnType<NonNullable<typeof reader>["read"]>> | undefined;
      try {
        chunk = await reader?.read();
      } catch (error) {
        throw transportError(ctx, stall, error, receivedThisAttempt > 0);
      }
      if (chunk === undefined || chunk.done) break;
      stall.arm();
      hash.update(chunk.value);
      await file.write(chunk.value);
      offset += chunk.value.length;
      receivedThisAttempt += chunk.value.length;
      report(offset, total);
    }
    await file.sync();
  } finally {
    stall.clear();
    await file.close();
  }
  if (total !== null && offset < total) {
    throw new NetworkFailure(
      `the connection closed after ${formatMB(offset)} of ${formatMB(total)}`,
      receivedThisAttempt > 0,
    );
  }
  if (total !== null && offset > total) {
    await removeFile(ctx.partPath);
    throw new SparkError(
      "download_failed",
      `Download of ${ctx.ref.uri} failed: the server sent ${offset} bytes but announced ${total}.`,
    );
  }
  return { hash, bytes: offset, resumed };
}

async function hasGgufMagic(path: string): Promise<boolean> {
  const file = await open(path, "r");
  try {
    const { bytesRead, buffer } = await file.read(Buffer.alloc(4), 0, 4, 0);
    return bytesRead === 4 && buffer.equals(GGUF_MAGIC);
  } finally {
    await file.close();
  }
}

/**
 * Downloads an `hf:` model into the cache (returning at once when it is already there).
 * Resumes a previous `.part`, verifies the sha256 the hub publishes, and renames the file into
 * place only when it is complete and verified. Failures are SparkErrors: `model_unavailable` (hub
 * unreachable), `model_not_found` (404), `download_failed`, `checksum_mismatch`, `cancelled`.
 */
export async function downloadModel(
  uri: string | HfModelRef,
  options: DownloadModelOptions = {},
): Promise<DownloadResult> {
  const ref = typeof uri === "string" ? parseHfUri(uri) : uri;
  const env = options.env ?? process.env;
  const finalPath = cachedPath(ref, options);
  if (options.force !== true) {
    const cached = await findCachedModel(ref, options);
    if (cached !== null) {
      return {
        uri: ref.uri,
        path: cached.path,
        bytes: cached.bytes,
        sha256: null,
        verified: false,
        resumed: false,
        alreadyCached: true,
      };
    }
  }
  const endpoint = hubEndpoint(options);
  const token = options.token ?? envValue(env, "HF_TOKEN") ?? envValue(env, "HUGGING_FACE_HUB_TOKEN");
  const ctx: Context = {
    ref,
    url: resolveUrl(ref, endpoint),
    endpoint,
    headers: {
      "User-Agent": "spark-agent",
      "Accept-Encoding": "identity",
      ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
    },
    finalPath,
    partPath: partialPath(finalPath),
    cacheDir: modelCacheDir(options),
    options,
    stallTimeoutMs: options.stallTimeoutMs ?? DEFAULT_STALL_TIMEOUT_MS,
    hasToken: token !== undefined,
  };
  const retries = options.retries ?? 3;
  const meter = new RateMeter();
  try {
    if (options.signal?.aborted) throw new Cancelled();
    const meta = await fetchMetadata(ctx, new StallTimer(ctx.stallTimeoutMs));
    let done: Transfer | undefined;
    for (let attempt = 0; done === undefined; attempt++) {
      try {
        meter.reset();
        done = await transfer(ctx, meta, new StallTimer(ctx.stallTimeoutMs), meter);
      } catch (error) {
        if (!(error instanceof NetworkFailure && error.progressed && attempt < retries)) throw error;
        try {
          await delay(options.retryDelayMs ?? 1_000, undefined, { signal: options.signal });
        } catch (abort) {
          throw new Cancelled({ cause: abort });
        }
      }
    }
    const sha256 = done.hash.digest("hex");
    if (meta.sha256 !== null && sha256 !== meta.sha256) {
      await removeFile(ctx.partPath);
      throw new SparkError(
        "checksum_mismatch",
        `Downloaded ${ref.uri} is corrupt: its sha256 is ${sha256} but the hub published ${meta.sha256}. ` +
          "The file was deleted; run the download again.",
      );
    }
    if (meta.sha256 === null) {
      options.onWarning?.(
        `${hostOf(ctx.url)} published no sha256 for ${ref.uri}; the download was not verified.`,
      );
    }
    if (!(await hasGgufMagic(ctx.partPath))) {
      await removeFile(ctx.partPath);
      throw new SparkError(
        "download_failed",
        `Downloaded ${ref.uri} is not a GGUF file (the server returned something else); it was deleted.`,
      );
    }
    await rename(ctx.partPath, finalPath);
    return {
      uri: ref.uri,
      path: finalPath,
      bytes: done.bytes,
      sha256,
      verified: meta.sha256 !== null,
      resumed: done.resumed,
      alreadyCached: false,
    };
  } catch (error) {
    if ((await partSize(ctx.partPath)) === 0) await pruneEmptyDirs(finalPath, options).catch(() => undefined);
    throw finalError(ctx, error);
  }
}
