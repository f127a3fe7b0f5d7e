import {
  createClient,
  ErrorReply,
  type RedisClientOptions,
  type RedisClientType,
  type RedisScripts,
} from "redis";
import { RedisError } from "./redis-error.js";
import { describeAddress, type RedisTarget } from "./redis-url.js";

/** A reply as the store reads it; an error reply inside an array stays an error, never text. */
export type RedisReply = string | number | null | RedisError | RedisReply[];

// biome-ignore lint/complexity/noBannedTypes: node-redis's own "no modules, no functions"
export type ScriptClient<S extends RedisScripts> = RedisClientType<{}, {}, S>;

export interface RedisConnectionOptions<S extends RedisScripts> {
  target: RedisTarget;
  /** Lua scripts (`defineScript`), run as EVALSHA with EVAL when Redis does not know them yet. */
  scripts: S;
  /** Time to connect, TLS and login included. Default: 2 s. */
  connectTimeoutMs?: number;
  /**
   * Time for one command, waiting for a connection included; past it that command alone fails.
   * Default: 5 s.
   */
  commandTimeoutMs?: number;
  /** Longest wait between two reconnection attempts (the backoff doubles from 50 ms). Default: 2 s. */
  reconnectMaxDelayMs?: number;
  /**
   * Certificates that `rediss://` trusts instead of Node's own CAs (tests; a private CA in
   * production is `NODE_EXTRA_CA_CERTS`). Default: Node's CAs.
   */
  tlsCa?: string;
}

type SocketOptions = NonNullable<RedisClientOptions["socket"]>;

/** Commands waiting at once, at most: requests never pile up without bound while Redis is slow. */
const MAX_IN_FLIGHT = 10_000;

/** One connection generation: its client and the commands that the next connection error fails. */
interface Generation<S extends RedisScripts> {
  client: ScriptClient<S>;
  waiting: Set<(error: unknown) => void>;
}

/**
 * One node-redis connection (`redis://`, `rediss://` or a unix socket) with the store's rules on
 * top: commands pipeline on it; each has its own deadline and fails alone when it passes it; a
 * broken connection is reconnected in the background with exponential backoff, and a command
 * issued meanwhile fails with the reason as soon as the next attempt fails (so a request during an
 * outage gets a quick 503, and one after Redis is back goes through). A connection on which a
 * timed-out command's reply is still missing one more timeout later is presumed dead (a silent
 * network, a frozen Redis) and replaced. Credentials never reach a message.
 */
export class RedisConnection<S extends RedisScripts> {
  private generation: Generation<S>;
  private everReady = false;
  private inFlight = 0;
  private disposed = false;
  private readonly where: string;
  private readonly commandTimeoutMs: number;

  private constructor(private readonly options: RedisConnectionOptions<S>) {
    this.where = describeAddress(options.target.address);
    this.commandTimeoutMs = options.commandTimeoutMs ?? 5_000;
    this.generation = this.newGeneration();
  }

  /** Connects (and logs in); throws a {@link RedisError} when the first attempt fails. */
  static async open<S extends RedisScripts>(options: RedisConnectionOptions<S>): Promise<RedisConnection<S>> {
    const connection = new RedisConnection(options);
    try {
      await connection.generation.client.connect();
    } catch (error) {
      await connection.dispose();
      throw RedisError.fromConnection(error, connection.where);
    }
    connection.everReady = true;
    return connection;
  }

  /** `host:port` or the socket path, for messages. */
  get address(): string {
    return this.where;
  }

  /** Sends one command; resolves with its reply, rejects with a {@link RedisError}. */
  command(args: string[]): Promise<RedisReply> {
    return this.run((client) => client.sendCommand(args)).then(toReply);
  }

  /**
   * Runs `call` (one command or script on the client it is given) under the rules above; rejects
   * with a {@link RedisError}.
   */
  run<T>(call: (client: ScriptClient<S>) => Promise<T>): Promise<T> {
    if (this.disposed) return Promise.reject(new RedisError("unavailable", "The Redis client was closed."));
    if (this.inFlight >= MAX_IN_FLIGHT)
      return Promise.reject(
        new RedisError(
          "unavailable",
          `Over ${MAX_IN_FLIGHT} commands already wait for Redis at ${this.where}.`,
        ),
      );
    this.inFlight++;
    const generation = this.generation;
    const controller = new AbortController();
    let pending: Promise<T>;
    try {
      pending = call(generation.client.withAbortSignal(controller.signal));
    } catch (error) {
      pending = Promise.reject(error);
    }
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const finish = (): boolean => {
        if (done) return false;
        done = true;
        this.inFlight--;
        clearTimeout(timer);
        generation.waiting.delete(onConnectionError);
        return true;
      };
      const onConnectionError = (error: unknown) => {
        if (!finish()) return;
        controller.abort(); // not sent yet: it never will be
        reject(RedisError.fromConnection(error, this.where));
      };
      const timer = setTimeout(() => {
        if (!finish()) return;
        controller.abort();
        reject(
          new RedisError(
            "unavailable",
            `Redis at ${this.where} did not answer within ${this.commandTimeoutMs} ms.`,
          ),
        );
        this.watchLateReply(generation, pending);
      }, this.commandTimeoutMs);
      generation.waiting.add(onConnectionError);
      pending.then(
        (value) => {
          if (finish()) resolve(value);
        },
        (error: unknown) => {
          if (!finish()) return;
          reject(
            error instanceof ErrorReply
              ? RedisError.fromReply(error)
              : RedisError.fromConnection(error, this.where),
          );
        },
      );
    });
  }

  /** Closes the connection and fails what is in flight; idempotent. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.end(this.generation, new RedisError("unavailable", "The Redis client was closed."));
  }

  private newGeneration(): Generation<S> {
    const { target } = this.options;
    const common = {
      connectTimeout: this.options.connectTimeoutMs ?? 2_000,
      reconnectStrategy: (retries: number) => this.reconnectDelay(retries),
    };
    const { address } = target;
    const { tlsCa } = this.options;
    const socket: SocketOptions =
      "path" in address
        ? { ...common, path: address.path, tls: false }
        : address.tls
          ? {
              ...common,
              host: address.host,
              port: address.port,
              tls: true,
              ...(tlsCa !== undefined ? { ca: tlsCa } : {}),
            }
          : { ...common, host: address.host, port: address.port, tls: false };
    const client = createClient({
      socket,
      ...(target.username !== undefined ? { username: target.username } : {}),
      ...(target.password !== undefined ? { password: target.password } : {}),
      ...(target.db !== 0 ? { database: target.db } : {}),
      scripts: this.options.scripts,
      disableClientInfo: true,
      maintNotifications: "disabled",
    }) as unknown as ScriptClient<S>;
    const generation: Generation<S> = { client, waiting: new Set() };
    // node-redis reports every failed (re)connection here; without a listener it would end the process.
    client.on("error", (error: unknown) => {
      const waiting = [...generation.waiting];
      generation.waiting.clear();
      for (const fail of waiting) fail(error);
    });
    return generation;
  }

  /** Before the first connection: no retry (start-up reports the reason); after: backoff. */
  private reconnectDelay(retries: number): number | false {
    if (!this.everReady || this.disposed) return false;
    const max = this.options.reconnectMaxDelayMs ?? 2_000;
    return Math.min(50 * 2 ** Math.min(retries, 16), max) + Math.floor(Math.random() * 50);
  }

  /**
   * After a sent command timed out: if its reply has not come one more timeout later, nothing is
   * answering on this connection; a new one replaces it.
   */
  private watchLateReply(generation: Generation<S>, pending: Promise<unknown>): void {
    let settled = false;
    const timer = setTimeout(() => {
      if (settled || this.disposed || this.generation !== generation) return;
      this.generation = this.newGeneration();
      this.generation.client.connect().catch(() => {}); // failures reach the 'error' listener
      this.end(
        generation,
        new RedisError("unavailable", `Redis at ${this.where} stopped answering; reconnecting.`),
      );
    }, this.commandTimeoutMs);
    timer.unref();
    const stop = () => {
      settled = true;
      clearTimeout(timer);
    };
    pending.then(stop, stop);
  }

  private end(generation: Generation<S>, error: RedisError): void {
    for (const fail of [...generation.waiting]) fail(error);
    generation.waiting.clear();
    try {
      generation.client.destroy();
    } catch {
      // Already closed (a first connection that failed).
    }
  }
}

/** node-redis's reply with error replies (at any depth) turned into {@link RedisError}s. */
export function toReply(value: unknown): RedisReply {
  if (value instanceof ErrorReply) return RedisError.fromReply(value);
  if (Array.isArray(value)) return (value as unknown[]).map((item) => toReply(item));
  if (typeof value === "string" || typeof value === "number" || value === null) return value;
  if (Buffer.isBuffer(value)) return value.toString("utf8");
  return String(value);
}
