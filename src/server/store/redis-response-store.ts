import { SparkError } from "../../protocol/errors.js";
import {
  type ResponseStore,
  type ResponseStoreOptions,
  STORE_DEFAULTS,
  type StoredResponse,
  turnJson,
} from "../response-store.js";
import { RedisConnection, type RedisReply, type ScriptClient } from "./redis-connection.js";
import { RedisError } from "./redis-error.js";
import { STORE_SCRIPTS, type StoreKeys, storeKeys } from "./redis-store-scripts.js";
import type { RedisTarget } from "./redis-url.js";

export interface RedisResponseStoreOptions extends ResponseStoreOptions {
  target: RedisTarget;
  /** Hash tag of every key (`{spark:v2}:turns`, ...; see KEY_NAMES). Default: `spark:v2`. */
  prefix?: string;
  /** Time for one Redis command. Default: 5 s. */
  commandTimeoutMs?: number;
  /** Longest wait between two reconnection attempts. Default: 2 s. */
  reconnectMaxDelayMs?: number;
  /** Certificates `rediss://` trusts instead of Node's CAs (see RedisConnectionOptions). Default: Node's. */
  tlsCa?: string;
}

/**
 * The response store shared by several servers: each turn of a chain is its own JSON and its
 * parent's id in two Redis hashes, with a sorted set of last use, one of expiry, and a byte count
 * that keep the whole store within the same byte, count and time budgets as the in-memory store (see
 * redis-store-scripts.ts). Every read and write is one script whose keys are all declared and share
 * a hash tag, so servers never see a half-written chain, and a Redis Cluster serves it from one slot.
 */
export class RedisResponseStore implements ResponseStore {
  readonly shared = true;
  private readonly keys: StoreKeys;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly ttlMs: number;

  get description(): string {
    return `Redis at ${this.options.target.shown}`;
  }

  private constructor(
    private readonly options: RedisResponseStoreOptions,
    private readonly connection: RedisConnection<typeof STORE_SCRIPTS>,
  ) {
    this.keys = storeKeys(options.prefix ?? "spark:v2");
    this.maxEntries = options.maxEntries ?? STORE_DEFAULTS.maxEntries;
    this.maxBytes = options.maxBytes ?? STORE_DEFAULTS.maxBytes;
    this.ttlMs = options.ttlMs ?? STORE_DEFAULTS.ttlMs;
  }

  /** Connects and checks the connection (PING); throws `store_unavailable` when it cannot. */
  static async create(options: RedisResponseStoreOptions): Promise<RedisResponseStore> {
    let connection: RedisConnection<typeof STORE_SCRIPTS>;
    try {
      connection = await RedisConnection.open({
        target: options.target,
        scripts: STORE_SCRIPTS,
        ...(options.commandTimeoutMs !== undefined ? { commandTimeoutMs: options.commandTimeoutMs } : {}),
        ...(options.reconnectMaxDelayMs !== undefined
          ? { reconnectMaxDelayMs: options.reconnectMaxDelayMs }
          : {}),
        ...(options.tlsCa !== undefined ? { tlsCa: options.tlsCa } : {}),
      });
    } catch (error) {
      throw unavailable(options.target, error);
    }
    const store = new RedisResponseStore(options, connection);
    try {
      await store.call((client) => client.sendCommand(["PING"]));
    } catch (error) {
      await store.dispose();
      throw error;
    }
    return store;
  }

  async get(id: string): Promise<StoredResponse | undefined> {
    const reply = await this.call((client) => client.readChain(this.keys, id, this.ttlMs));
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
    const bounds = { ttlMs: this.ttlMs, maxBytes: this.maxBytes, maxEntries: this.maxEntries };
    const toWrite = turns.map((turn) => ({
      id: turn.id,
      parent: turn.parent?.id ?? "",
      body: turnJson(turn),
    }));
    const reply = await this.call((client) => client.writeChain(this.keys, bounds, toWrite));
    if (reply !== "ok" && reply !== "missing" && reply !== "too_large") throw this.corrupt(entry.id);
    return reply;
  }

  async dispose(): Promise<void> {
    await this.connection.dispose();
  }

  private async call<T>(what: (client: ScriptClient<typeof STORE_SCRIPTS>) => Promise<T>): Promise<T> {
    try {
      return await this.connection.run(what);
    } catch (error) {
      throw unavailable(this.options.target, error);
    }
  }

  private corrupt(id: string): SparkError {
    return new SparkError(
      "store_unavailable",
      `The response store (Redis at ${this.options.target.shown}) holds something unreadable for ${id}.`,
    );
  }
}

/** A Redis failure as the `store_unavailable` error the server answers with (503). */
function unavailable(target: RedisTarget, error: unknown): SparkError {
  const cause = error instanceof RedisError ? error : new RedisError("unavailable", String(error));
  return new SparkError(
    "store_unavailable",
    `The response store (Redis at ${target.shown}) failed: ${cause.message}`,
    { cause },
  );
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
