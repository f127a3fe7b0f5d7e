import { type CommandParser, defineScript } from "redis";
import { type RedisReply, toReply } from "./redis-connection.js";

/** Longest chain a script walks: bounds a script's time on a corrupted store. */
export const MAX_CHAIN = 100_000;

/**
 * The store's keys, every one declared to each script (KEYS[1..6], in this order) and under one hash
 * tag, so a Redis Cluster puts them in one slot:
 * - `turns`: hash, turn id -> its own turn as JSON (its byte length is what the budget counts);
 * - `parents`: hash, turn id -> its parent's id (`''` for the first turn);
 * - `lru`: sorted set, turn id -> last use (see TOUCH);
 * - `expiry`: sorted set, turn id -> when it expires (ms, Redis's clock), for turns with a TTL;
 * - `clock`: the counter of uses; `total`: the bytes of every turn in `turns`.
 */
export const KEY_NAMES = ["turns", "parents", "lru", "expiry", "clock", "total"] as const;

export type StoreKeys = readonly string[];

/** The keys of a store whose prefix is `prefix` (`spark:v2` -> `{spark:v2}:turns`, ...). */
export function storeKeys(prefix: string): StoreKeys {
  const tag = prefix.replace(/:$/, "");
  return KEY_NAMES.map((name) => `{${tag}}:${name}`);
}

/**
 * Shared by both scripts. Turns past their expiry leave first (they are the least recently used),
 * whoever calls. Touching a chain: its last use is a tick of `clock` (strictly increasing, whatever
 * the servers' clocks say); the leaf scores `tick * MAX_CHAIN`, each earlier turn one more, and
 * `ZADD GT` never lowers a score, so an earlier turn always outlives the turns built on it (eviction
 * takes the lowest scores first) and a touched chain is newer than anything touched before. Its
 * expiry is renewed to now + TTL. `keep` gives the keys themselves a TTL that never falls under the
 * turns' (set to twice the TTL whenever under it, so it is renewed about once per TTL, not per call):
 * a store nobody uses any more leaves Redis by Redis's own expiry.
 */
const PRELUDE = `
local turns, parents, lru, expiry, clock, totalKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local total = tonumber(redis.call('GET', totalKey) or '0')

local function forget(id)
  total = total - redis.call('HSTRLEN', turns, id)
  redis.call('HDEL', turns, id)
  redis.call('HDEL', parents, id)
  redis.call('ZREM', lru, id)
  redis.call('ZREM', expiry, id)
end

local expired = redis.call('ZRANGEBYSCORE', expiry, '-inf', now)
for _, id in ipairs(expired) do forget(id) end
if #expired > 0 then redis.call('SET', totalKey, total, 'KEEPTTL') end

local function touch(ids, ttl)
  local base = redis.call('INCR', clock) * ${MAX_CHAIN}
  for i, id in ipairs(ids) do
    redis.call('ZADD', lru, 'GT', base + i - 1, id)
    if ttl > 0 then redis.call('ZADD', expiry, now + ttl, id) end
  end
end

local function keep(ttl)
  for _, key in ipairs(KEYS) do
    if ttl > 0 then
      if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, 2 * ttl) end
    else
      redis.call('PERSIST', key)
    end
  end
end
`;

/**
 * Reads a chain leaf first and touches it; a chain with a missing turn reads as not found (nil).
 * ARGV: id, ttl (ms, 0 = none).
 */
const READ_CHAIN = `${PRELUDE}
local id, ttl = ARGV[1], tonumber(ARGV[2])
local bodies, ids = {}, {}
while id and id ~= '' do
  if #ids >= ${MAX_CHAIN} then return redis.error_reply('ERR chain too long') end
  local body = redis.call('HGET', turns, id)
  if not body then return false end
  bodies[#bodies + 1] = body
  ids[#ids + 1] = id
  id = redis.call('HGET', parents, id)
end
touch(ids, ttl)
keep(ttl)
return bodies
`;

/**
 * Stores a leaf (and, on a retry, its earlier turns), touches its chain, then evicts least recently
 * used turns until the byte and count budgets hold. A chain over the byte budget is not written
 * ('too_large'); a chain whose earlier turn is gone is not written either ('missing': the caller
 * resends it whole). ARGV: ttl, maxBytes, maxEntries, n, then n triples (id, parent id or '', body)
 * from the leaf back.
 */
const WRITE_CHAIN = `${PRELUDE}
local ttl, maxBytes, maxEntries, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local given = {}
for i = 0, n - 1 do
  given[ARGV[5 + 3 * i]] = { ARGV[6 + 3 * i], ARGV[7 + 3 * i] }
end
local chain, bytes, id = {}, 0, ARGV[5]
while id and id ~= '' do
  if #chain >= ${MAX_CHAIN} then return redis.error_reply('ERR chain too long') end
  chain[#chain + 1] = id
  local g = given[id]
  if g then
    bytes = bytes + #g[2]
    id = g[1]
  else
    local size = redis.call('HSTRLEN', turns, id)
    if size == 0 then return 'missing' end
    bytes = bytes + size
    id = redis.call('HGET', parents, id)
  end
end
if bytes > maxBytes then return 'too_large' end
for gid, g in pairs(given) do
  total = total - redis.call('HSTRLEN', turns, gid) + #g[2]
  redis.call('HSET', turns, gid, g[2])
  redis.call('HSET', parents, gid, g[1])
end
touch(chain, ttl)
while total > maxBytes or redis.call('ZCARD', lru) > maxEntries do
  local popped = redis.call('ZPOPMIN', lru)
  if #popped == 0 then total = 0 break end
  forget(popped[1])
end
redis.call('SET', totalKey, total, 'KEEPTTL')
keep(ttl)
return 'ok'
`;

/** A turn to write: its id, its parent's id (`''` for none) and its own JSON. */
export interface TurnToWrite {
  id: string;
  parent: string;
  body: string;
}

/** The store's scripts, for `createClient({ scripts })`: `client.readChain(...)`, `client.writeChain(...)`. */
export const STORE_SCRIPTS = {
  readChain: defineScript({
    SCRIPT: READ_CHAIN,
    NUMBER_OF_KEYS: KEY_NAMES.length,
    parseCommand(parser: CommandParser, keys: StoreKeys, id: string, ttlMs: number) {
      for (const key of keys) parser.pushKey(key);
      parser.push(id, String(ttlMs));
    },
    transformReply: (reply: unknown): RedisReply => toReply(reply),
  }),
  writeChain: defineScript({
    SCRIPT: WRITE_CHAIN,
    NUMBER_OF_KEYS: KEY_NAMES.length,
    parseCommand(
      parser: CommandParser,
      keys: StoreKeys,
      bounds: { ttlMs: number; maxBytes: number; maxEntries: number },
      turns: TurnToWrite[],
    ) {
      for (const key of keys) parser.pushKey(key);
      parser.push(
        String(bounds.ttlMs),
        String(bounds.maxBytes),
        String(bounds.maxEntries),
        String(turns.length),
      );
      for (const turn of turns) parser.push(turn.id, turn.parent, turn.body);
    },
    transformReply: (reply: unknown): RedisReply => toReply(reply),
  }),
};
