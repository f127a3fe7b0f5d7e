import { createHash, randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { chmod, mkdir, readdir, readFile, rename, stat, unlink, utimes, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Llama, LlamaContext, LlamaContextSequence, Token } from "node-llama-cpp";
import { z } from "zod";

/**
 * Pre-warmed KV states saved to disk, so a restart restores a long prompt prefix (a system prompt
 * and tools) in a fraction of a second instead of evaluating it again. Each entry is a pair of
 * files named after a hash of its key: `<id>.kv`, llama.cpp's sequence state file, and `<id>.json`,
 * the header (the full key, the prefix's token count and hash, the state file's size and SHA-256).
 * Both are written to a temporary name and renamed; an entry whose header or state does not check
 * out is deleted and rebuilt by the next evaluation of its prefix.
 */
export interface KvStateCacheOptions {
  /** Folder holding the saved states (created when needed). */
  dir: string;
  /** Most bytes the saved states may take; the least recently used go first. Default: 2 GiB. */
  maxBytes?: number;
  /** Shortest prefix worth saving, in tokens. Default: 512. */
  minTokens?: number;
}

export const DEFAULT_KV_CACHE_MAX_BYTES = 2 * 1024 ** 3;
export const DEFAULT_KV_CACHE_MIN_TOKENS = 512;

/** Everything besides the tokens that a saved state must match to be loaded into a context. */
export interface KvStateKey {
  model: { path: string; bytes: number; mtimeMs: number };
  contextSize: number;
  sequences: number;
  flashAttention: string;
  kvCacheKeyType: string;
  kvCacheValueType: string;
  runtime: { nodeLlamaCpp: string; llamaCpp: string; gpu: string };
}

const KEY_SCHEMA = z.strictObject({
  model: z.strictObject({ path: z.string(), bytes: z.number(), mtimeMs: z.number() }),
  contextSize: z.number(),
  sequences: z.number(),
  flashAttention: z.string(),
  kvCacheKeyType: z.string(),
  kvCacheValueType: z.string(),
  runtime: z.strictObject({ nodeLlamaCpp: z.string(), llamaCpp: z.string(), gpu: z.string() }),
});

const HEADER_FORMAT = 1;
const SHA256 = z.string().regex(/^[0-9a-f]{64}$/);
const HEADER_SCHEMA = z.strictObject({
  format: z.literal(HEADER_FORMAT),
  key: KEY_SCHEMA,
  keyHash: SHA256,
  tokenCount: z.number().int().positive(),
  tokensSha256: SHA256,
  stateBytes: z.number().int().positive(),
  stateSha256: SHA256,
});
type Header = z.infer<typeof HEADER_SCHEMA>;

const HEADER_MAX_BYTES = 64 * 1024;
/** A temporary file this old belongs to a writer that died; younger ones may still be written. */
const STALE_TEMP_MS = 60 * 60 * 1000;

/** The key of states that `context` (of the model at `modelPath`, run by `llama`) can load. */
export async function kvStateKeyOf(
  llama: Llama,
  modelPath: string,
  context: LlamaContext,
): Promise<KvStateKey> {
  const path = resolve(modelPath);
  const file = await stat(path);
  return {
    model: { path, bytes: file.size, mtimeMs: file.mtimeMs },
    contextSize: context.contextSize,
    sequences: context.totalSequences,
    flashAttention: String(context.flashAttention),
    kvCacheKeyType: String(context.kvCacheKeyType),
    kvCacheValueType: String(context.kvCacheValueType),
    runtime: {
      nodeLlamaCpp: await nodeLlamaCppVersion(),
      llamaCpp: llama.llamaCppRelease.release,
      gpu: String(llama.gpu),
    },
  };
}

async function nodeLlamaCppVersion(): Promise<string> {
  // The package exports no package.json; its entry point is <package>/dist/index.js.
  const entry = new URL(import.meta.resolve("node-llama-cpp"));
  const manifest = JSON.parse(await readFile(new URL("../package.json", entry), "utf8")) as {
    version: string;
  };
  return manifest.version;
}

/** Saves and restores the KV states of prompt prefixes for one context (see the file comment). */
export class KvStateCache {
  readonly dir: string;
  readonly maxBytes: number;
  readonly minTokens: number;
  private readonly keyHash: string;
  private readonly saving = new Set<string>();

  constructor(
    options: KvStateCacheOptions,
    private readonly key: KvStateKey,
  ) {
    this.dir = options.dir;
    this.maxBytes = options.maxBytes ?? DEFAULT_KV_CACHE_MAX_BYTES;
    this.minTokens = options.minTokens ?? DEFAULT_KV_CACHE_MIN_TOKENS;
    this.keyHash = sha256(JSON.stringify(key));
  }

  /**
   * Loads the longest saved prefix of `tokens` that is longer than `after` tokens (what the sequence
   * already shares with them) and at most `upTo` tokens, replacing the sequence's state. Returns the
   * tokens restored, 0 when nothing was (the sequence is then unchanged, unless a load failed
   * half-way: llama.cpp then clears it).
   */
  async restore(
    sequence: LlamaContextSequence,
    tokens: readonly Token[],
    { after, upTo }: { after: number; upTo: number },
  ): Promise<number> {
    if (upTo - after < 1) return 0;
    const candidates = (await this.headers())
      .filter(({ header }) => header.tokenCount > after && header.tokenCount <= upTo)
      .sort((a, b) => b.header.tokenCount - a.header.tokenCount);
    for (const { id, header } of candidates) {
      if (hashTokens(tokens, header.tokenCount) !== header.tokensSha256) continue;
      if (await this.load(sequence, id, header, tokens)) return header.tokenCount;
    }
    return 0;
  }

  /**
   * Saves the sequence's whole state as the prefix it holds, unless it is shorter than `minTokens`
   * or already saved. A state that cannot be written is skipped: the cache only saves time.
   */
  async save(sequence: LlamaContextSequence): Promise<boolean> {
    const tokens = sequence.contextTokens;
    if (tokens.length < this.minTokens) return false;
    const tokensSha256 = hashTokens(tokens, tokens.length);
    const id = sha256(`${this.keyHash}:${tokensSha256}`).slice(0, 40);
    if (this.saving.has(id)) return false;
    this.saving.add(id);
    const statePath = join(this.dir, `${id}.kv`);
    const headerPath = join(this.dir, `${id}.json`);
    const tempState = tempPath(statePath);
    const tempHeader = tempPath(headerPath);
    try {
      if ((await this.readHeader(id)) !== undefined) {
        await touch(headerPath);
        return false;
      }
      // The states hold the prompts' tokens: private to the user, like the prompts themselves.
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await sequence.saveStateToFile(tempState);
      await chmod(tempState, 0o600);
      const state = await fileDigest(tempState);
      const header: Header = {
        format: HEADER_FORMAT,
        key: this.key,
        keyHash: this.keyHash,
        tokenCount: tokens.length,
        tokensSha256,
        stateBytes: state.bytes,
        stateSha256: state.sha256,
      };
      await rename(tempState, statePath);
      await writeFile(tempHeader, JSON.stringify(header), { mode: 0o600 });
      await rename(tempHeader, headerPath);
    } catch {
      await removeFiles([tempState, tempHeader]);
      return false;
    } finally {
      this.saving.delete(id);
    }
    await this.evict();
    return true;
  }

  /** Deletes the least recently used entries until the cache fits in `maxBytes`. */
  async evict(): Promise<void> {
    const entries = await listEntries(this.dir);
    let total = entries.reduce((sum, entry) => sum + entry.bytes, 0);
    for (const entry of entries.sort((a, b) => a.lastUsedMs - b.lastUsedMs)) {
      if (total <= this.maxBytes) break;
      await removeFiles(entry.files);
      total -= entry.bytes;
    }
  }

  private async load(
    sequence: LlamaContextSequence,
    id: string,
    header: Header,
    tokens: readonly Token[],
  ): Promise<boolean> {
    const statePath = join(this.dir, `${id}.kv`);
    try {
      const state = await fileDigest(statePath);
      if (state.bytes !== header.stateBytes || state.sha256 !== header.stateSha256)
        throw new Error("corrupt");
      await sequence.loadStateFromFile(statePath, { acceptRisk: true });
      const loaded = sequence.contextTokens;
      const same = loaded.length === header.tokenCount && loaded.every((token, i) => token === tokens[i]);
      if (!same) {
        await sequence.clearHistory();
        throw new Error("mismatch");
      }
    } catch {
      await this.remove(id);
      return false;
    }
    await touch(join(this.dir, `${id}.json`));
    return true;
  }

  /** The headers of this context's entries; unreadable or invalid ones are deleted. */
  private async headers(): Promise<{ id: string; header: Header }[]> {
    const found: { id: string; header: Header }[] = [];
    for (const name of await listNames(this.dir)) {
      if (!name.endsWith(".json")) continue;
      const id = name.slice(0, -".json".length);
      const header = await this.readHeader(id);
      if (header?.keyHash === this.keyHash) found.push({ id, header });
    }
    return found;
  }

  private async readHeader(id: string): Promise<Header | undefined> {
    const header = await readHeader(join(this.dir, `${id}.json`));
    if (header === "invalid") await this.remove(id);
    return header === "invalid" ? undefined : header;
  }

  private async remove(id: string): Promise<void> {
    await removeFiles([join(this.dir, `${id}.kv`), join(this.dir, `${id}.json`)]);
  }
}

/** What `removeKvStates` removed. */
export interface RemovedKvStates {
  entries: number;
  bytes: number;
}

/**
 * Deletes saved states from `dir`: those of the model file at `modelPath`, or all of them (and any
 * leftover files) when it is not given.
 */
export async function removeKvStates(
  dir: string,
  options: { modelPath?: string } = {},
): Promise<RemovedKvStates> {
  const modelPath = options.modelPath === undefined ? undefined : resolve(options.modelPath);
  const removed: RemovedKvStates = { entries: 0, bytes: 0 };
  for (const entry of await listEntries(dir)) {
    if (modelPath !== undefined && entry.modelPath !== modelPath) continue;
    await removeFiles(entry.files);
    removed.entries++;
    removed.bytes += entry.bytes;
  }
  return removed;
}

/** The saved states in `dir`: how many, and the bytes they take. */
export async function kvStatesUsage(dir: string): Promise<RemovedKvStates> {
  const entries = await listEntries(dir);
  return { entries: entries.length, bytes: entries.reduce((sum, entry) => sum + entry.bytes, 0) };
}

interface Entry {
  files: string[];
  bytes: number;
  lastUsedMs: number;
  /** The model the header names; undefined for a state without a valid header. */
  modelPath: string | undefined;
}

/**
 * The cache's files grouped by entry. A header's modification time is its entry's last use (the
 * access time is not reliable: `noatime`, `relatime`). Temporary files of live writers are left
 * out; those of dead ones are entries of their own, so they are evicted and cleared.
 */
async function listEntries(dir: string): Promise<Entry[]> {
  const byId = new Map<string, Entry>();
  const now = Date.now();
  for (const name of await listNames(dir)) {
    if (!/\.(kv|json|tmp)$/.test(name)) continue;
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (!info?.isFile()) continue;
    const temporary = name.endsWith(".tmp");
    if (temporary && now - info.mtimeMs < STALE_TEMP_MS) continue;
    const id = temporary ? name : name.replace(/\.(kv|json)$/, "");
    const entry = byId.get(id) ?? { files: [], bytes: 0, lastUsedMs: info.mtimeMs, modelPath: undefined };
    entry.files.push(path);
    entry.bytes += info.size;
    if (name.endsWith(".json")) {
      entry.lastUsedMs = info.mtimeMs;
      const header = await readHeader(path);
      if (header !== "invalid") entry.modelPath = header?.key.model.path;
    }
    byId.set(id, entry);
  }
  return [...byId.values()];
}

async function readHeader(path: string): Promise<Header | undefined | "invalid"> {
  let text: string;
  try {
    const info = await stat(path);
    if (info.size > HEADER_MAX_BYTES) return "invalid";
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  try {
    const parsed = HEADER_SCHEMA.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : "invalid";
  } catch {
    return "invalid";
  }
}

async function listNames(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch {
    return [];
  }
}

async function removeFiles(paths: string[]): Promise<void> {
  await Promise.all(paths.map((path) => unlink(path).catch(() => undefined)));
}

async function touch(path: string): Promise<void> {
  const now = new Date();
  await utimes(path, now, now).catch(() => undefined);
}

function tempPath(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function hashTokens(tokens: readonly Token[], count: number): string {
  const words = Uint32Array.from(tokens.slice(0, count));
  return createHash("sha256").update(new Uint8Array(words.buffer)).digest("hex");
}

async function fileDigest(path: string): Promise<{ bytes: number; sha256: string }> {
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    bytes += (chunk as Buffer).length;
    hash.update(chunk as Buffer);
  }
  return { bytes, sha256: hash.digest("hex") };
}
