import { createHash } from "node:crypto";
import { SparkError } from "../../protocol/errors.js";
import {
  type ResponseStore,
  type ResponseStoreOptions,
  STORE_DEFAULTS,
  type StoredResponse,
  turnJson,
} from "../response-store.js";
import { RedisClient, RedisError, type RedisReply } from "./redis-client.js";
import type { RedisTarget } from "./redis-url.js";

export interface RedisResponseStoreOptions extends ResponseStoreOptions {
  target: RedisTarget;
  /** Prefix of every key. Default: `spark:v1:`. */
  prefix?: string;
  /** Time for one Redis command. Default: 5 s. */
  commandTimeoutMs?: number;
}

/** Longest chain a script walks: bounds a script's time on a corrupted store. */
const MAX_CHAIN = 100_000;

/**
 * Touching a chain: its last use is a tick of a counter in Redis (strictly increasing, whatever the
 * servers' clocks say); the leaf scores `tick * MAX_CHAIN`, each earlier turn one more, and `ZADD
 * GT` never lowers a score, so an earlier turn always outlives the turns built on it (eviction takes
 * the lowest scores first) and a touched chain is newer than anything touched before.
 */
const TOUCH = `
local function touch(p, ids, ttl)
  local base = redis.call('INCR', p .. 'clock') * ${MAX_CHAIN}
  for i, rid in ipairs(ids) do
    if ttl > 0 then redis.call('PEXPIRE', p .. 'r:' .. rid, ttl) end
    redis.call('ZADD', p .. 'lru', 'GT', base + i - 1, rid)
  end
end
`;

/**
 * Reads a chain leaf first and touches it. A chain with a missing turn reads as not found.
 * ARGV: prefix, id, ttl (ms, 0 = none).
 */
const GET_SCRIPT = `${TOUCH}
local p, id, ttl = ARGV[1], ARGV[2], tonumber(ARGV[3])
local bodies, ids = {}, {}
while id and id ~= '' do
  if #ids >= ${MAX_CHAIN} then return redis.error_reply('ERR chain too long') end
  local v = redis.call('HMGET', p .. 'r:' .. id, 'body', 'parent')
  if not v[1] then return false end
  bodies[#bodies + 1] = v[1]
  ids[#ids + 1] = id
  id = v[2]
end
touch(p, ids, ttl)
return bodies
`;

/**
 * Stores a leaf (and, on a retry, its earlier turns), touches its chain, then evicts least recently
 * used turns until the byte and count budgets hold. Turns that expired (Redis dropped their key; they
 * are the least recently used) leave the accounting first. A chain over the byte budget is not
 * written ('too_large'); a chain whose earlier turn is gone is not written either ('missing': the
 * caller resends it whole). ARGV: prefix, ttl, maxBytes, maxEntries, n, then n triples (id, parent
 * id or '', body) from the leaf back.
 */
const PUT_SCRIPT = `${TOUCH}
local p, ttl = ARGV[1], tonumber(ARGV[2])
local maxBytes, maxEntries, n = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local lru, sizes, totalKey = p .. 'lru', p .. 'size', p .. 'total'
local total = tonumber(redis.call('GET', totalKey) or '0')
for _, sid in ipairs(redis.call('ZRANGE', lru, 0, 255)) do
  if redis.call('EXISTS', p .. 'r:' .. sid) == 1 then break end
  redis.call('ZREM', lru, sid)
  total = total - tonumber(redis.call('HGET', sizes, sid) or '0')
  redis.call('HDEL', sizes, sid)
end
local given, chain, bytes = {}, {}, 0
for i = 0, n - 1 do
  local id, parent, body = ARGV[6 + 3 * i], ARGV[7 + 3 * i], ARGV[8 + 3 * i]
  given[id] = { parent, body }
end
local id = ARGV[6]
while id and id ~= '' do
  if #chain >= ${MAX_CHAIN} then return redis.error_reply('ERR chain too long') end
  chain[#chain + 1] = id
  local g = given[id]
  if g then
    bytes = bytes + #g[2]
    id = g[1]
  else
    local size = redis.call('HGET', sizes, id)
    if not size or redis.call('EXISTS', p .. 'r:' .. id) == 0 then return 'missing' end
    bytes = bytes + tonumber(size)
    id = redis.call('HGET', p .. 'r:' .. id, 'parent')
  end
end
if bytes > maxBytes then return 'too_large' end
for gid, g in pairs(given) do
  local old = redis.call('HGET', sizes, gid)
  if old then total = total - tonumber(old) end
  redis.call('HSET', p .. 'r:' .. gid, 'body', g[2], 'parent', g[1])
  redis.call('HSET', sizes, gid, #g[2])
  total = total + #g[2]
end
touch(p, chain, ttl)
while total > maxBytes or redis.call('ZCARD', lru) > maxEntries do
  local popped = redis.call('ZPOPMIN', lru)
  if #popped == 0 then total = 0 break end
  local gone = popped[1]
  redis.call('DEL', p .. 'r:' .. gone)
  total = total - tonumber(redis.call('HGET', sizes, gone) or '0')
  redis.call('HDEL', sizes, gone)
end
redis.call('SET', totalKey, total)
return 'ok'
`;

interface Script {
  text: string;
  sha: string;
}

function script(text: string): Script {
  return { text, sha: createHash("sha1").update(text).digest("hex") };
}

const GET = script(GET_SCRIPT);
const PUT = script(PUT_SCRIPT);

/**
 * The response store shared by several servers: each turn of a chain is a Redis hash (its own turn
 * as JSON and its parent's id) under `prefix`, expiring through Redis's own expiry, with a sorted set
 * of last use and a byte count per turn that keep the whole store within the same byte and count
 * budgets as the in-memory store (see the scripts above). Every read and write is one script, so
 * servers never see a half-written chain.
 */
export class RedisResponseStore implements ResponseStore {
  readonly shared = true;
  private readonly client: RedisClient;
  private readonly prefix: string;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly ttlMs: number;

  get description(): string {
    return `Redis at ${this.options.target.shown}`;
  }

  private constructor(private readonly options: RedisResponseStoreOptions) {
    this.prefix = options.prefix ?? "spark:v1:";
    this.maxEntries = options.maxEntries ?? STORE_DEFAULTS.maxEntries;
    this.maxBytes = options.maxBytes ?? STORE_DEFAULTS.maxBytes;
    this.ttlMs = options.ttlMs ?? STORE_DEFAULTS.ttlMs;
    const { target } = options;
    this.client = new RedisClient({
      address: target.address,
      db: target.db,
      ...(target.username !== undefined ? { username: target.username } : {}),
      ...(target.password !== undefined ? { password: target.password } : {}),
      ...(options.commandTimeoutMs !== undefined ? { commandTimeoutMs: options.commandTimeoutMs } : {}),
      // A chain is at most the byte budget; the rest is framing.
      maxReplyBytes: this.maxBytes + 1024 * 1024 + 64 * MAX_CHAIN,
      maxArrayLength: MAX_CHAIN,
    });
  }

  /** Connects and checks the connection (PING); throws `store_unavailable` when it cannot. */
  static async create(options: RedisResponseStoreOptions): Promise<RedisResponseStore> {
    const store = new RedisResponseStore(options);
    try {
      await store.call(["PING"]);
    } catch (error) {
      await store.dispose();
      throw error;
    }
    return store;
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const reply = await this.eval(GET, [this.prefix, id, this.ttlMs]);
    if (reply === null) return undefined;
    if (!Array.isArray(reply) || reply.length === 0) throw this.corrupt(id);
    let parent: StoredResponse | null = null;
    for (let i = reply.length - 1; i >= 0; i--) {
      const body = reply[i];
      const turn = typeof body === "string" ? parseTurn(body) : null;
      if (!turn) throw this.corrupt(id);
      parent = { ...turn, parent };
    }
    return parent!.id === id ? parent! : undefined;
  }

  async put(entry: StoredResponse): Promise<void> {
    const first = await this.write(entry, [entry]);
    if (first !== "missing") return;
    // An earlier turn was evicted or expired while this one ran: write the chain whole.
    const chain: StoredResponse[] = [];
    for (let at: StoredResponse | null = entry; at; at = at.parent) chain.push(at);
    await this.write(entry, chain);
  }

  private async write(entry: StoredResponse, turns: StoredResponse[]): Promise<RedisReply> {
    const args: (string | number)[] = [this.prefix, this.ttlMs, this.maxBytes, this.maxEntries, turns.length];
    for (const turn of turns) args.push(turn.id, turn.parent?.id ?? "", turnJson(turn));
    const reply = await this.eval(PUT, args);
    if (reply !== "ok" && reply !== "missing" && reply !== "too_large") throw this.corrupt(entry.id);
    return reply;
  }

  async dispose(): Promise<void> {
    this.client.dispose();
  }

  private async eval(which: Script, args: (string | number)[]): Promise<RedisReply> {
    try {
      return await this.call(["EVALSHA", which.sha, 0, ...args]);
    } catch (error) {
      if (
        !(
          error instanceof SparkError &&
          error.cause instanceof RedisError &&
          error.cause.prefix === "NOSCRIPT"
        )
      )
        throw error;
      return this.call(["EVAL", which.text, 0, ...args]);
    }
  }

  private async call(args: (string | number)[]): Promise<RedisReply> {
    try {
      return await this.client.command(args);
    } catch (error) {
      const cause = error instanceof RedisError ? error : new RedisError("unavailable", String(error));
      throw new SparkError(
        "store_unavailable",
        `The response store (Redis at ${this.options.target.shown}) failed: ${cause.message}`,
        { cause },
      );
    }
  }

  private corrupt(id: string): SparkError {
    return new SparkError(
      "store_unavailable",
      `The response store (Redis at ${this.options.target.shown}) holds something unreadable for ${id}.`,
    );
  }
}

/** A stored turn read back from Redis, checked for the fields the server relies on; null if not. */
function parseTurn(body: string): Omit<StoredResponse, "parent"> | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null) return null;
  const turn = value as Record<string, unknown>;
  const settings = turn.settings as Record<string, unknown> | null | undefined;
  const ok =
    typeof turn.id === "string" &&
    typeof turn.conversation === "string" &&
    typeof turn.model === "string" &&
    Array.isArray(turn.messages) &&
    Array.isArray(turn.pendingCalls) &&
    typeof settings === "object" &&
    settings !== null &&
    Array.isArray(settings.tools);
  return ok ? (turn as unknown as Omit<StoredResponse, "parent">) : null;
}
