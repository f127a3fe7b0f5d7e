import { connect, type Socket } from "node:net";
import { CodedError } from "../../protocol/errors.js";

/** A RESP2 reply: simple and bulk strings as text, integers, nil, arrays. */
export type RedisReply = string | number | null | RedisReply[];

/**
 * `unavailable`: no connection, or it broke or timed out (the command may or may not have run);
 * `reply`: Redis answered with an error (`prefix` is its first word, e.g. `NOSCRIPT`, `WRONGPASS`);
 * `protocol`: the reply was malformed or over the size bound (the connection is dropped).
 */
export class RedisError extends CodedError<"unavailable" | "reply" | "protocol"> {
  constructor(
    code: "unavailable" | "reply" | "protocol",
    message: string,
    readonly prefix: string | null = null,
    options: { cause?: unknown } = {},
  ) {
    super(code, message, options);
    this.name = "RedisError";
  }
}

export type RedisAddress = { host: string; port: number } | { path: string };

export interface RedisClientOptions {
  address: RedisAddress;
  /** ACL user for AUTH. Default: none (the `default` user). */
  username?: string;
  /** Sent with AUTH on every connection; never logged or put in an error. Default: no AUTH. */
  password?: string;
  /** Database selected on every connection. Default: 0. */
  db?: number;
  /** Time to connect (and authenticate). Default: 2 s. */
  connectTimeoutMs?: number;
  /** Time for one command's reply; past it the connection is dropped. Default: 5 s. */
  commandTimeoutMs?: number;
  /** Largest reply accepted (bytes on the wire); a larger one drops the connection. Default: 64 MiB. */
  maxReplyBytes?: number;
  /** Most elements of one reply array. Default: 1,000,000. */
  maxArrayLength?: number;
}

interface Pending {
  resolve: (reply: RedisReply) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** Parsing stopped short: at least `needed` bytes must be buffered before trying again. */
class Incomplete {
  constructor(readonly needed: number) {}
}

/**
 * A small Redis client over `node:net`: RESP2, one connection, commands pipelined in order. A broken
 * connection fails the commands in flight with `unavailable`; the next command connects again, so
 * a Redis that comes back is used again without a restart.
 */
export class RedisClient {
  private socket: Socket | null = null;
  private connecting: Promise<Socket> | null = null;
  private readonly pending: Pending[] = [];
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Bytes needed before the next parse can succeed. */
  private needed = 1;
  private disposed = false;
  private readonly connectTimeoutMs: number;
  private readonly commandTimeoutMs: number;
  private readonly maxReplyBytes: number;
  private readonly maxArrayLength: number;

  constructor(private readonly options: RedisClientOptions) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? 2_000;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 5_000;
    this.maxReplyBytes = options.maxReplyBytes ?? 64 * 1024 * 1024;
    this.maxArrayLength = options.maxArrayLength ?? 1_000_000;
  }

  /** Sends one command; resolves with its reply, rejects with a {@link RedisError}. */
  async command(args: (string | number)[]): Promise<RedisReply> {
    const socket = await this.connection();
    return this.send(socket, args);
  }

  /** Closes the connection and fails what is in flight; idempotent. */
  dispose(): void {
    this.disposed = true;
    this.drop(new RedisError("unavailable", "The Redis client was closed."));
  }

  private connection(): Promise<Socket> {
    if (this.disposed) return Promise.reject(new RedisError("unavailable", "The Redis client was closed."));
    if (this.socket) return Promise.resolve(this.socket);
    this.connecting ??= this.open().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async open(): Promise<Socket> {
    const socket = await new Promise<Socket>((resolve, reject) => {
      const socket = connect(this.options.address);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new RedisError("unavailable", `Redis at ${describe(this.options.address)} did not answer in time.`),
        );
      }, this.connectTimeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.off("error", fail);
        resolve(socket);
      });
      const fail = (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          new RedisError(
            "unavailable",
            `Cannot reach Redis at ${describe(this.options.address)}: ${error.code ?? error.message}.`,
            null,
            { cause: error },
          ),
        );
      };
      socket.once("error", fail);
    });
    socket.setNoDelay(true);
    this.chunks = [];
    this.buffered = 0;
    this.needed = 1;
    socket.on("data", (chunk: Buffer) => this.onData(socket, chunk));
    socket.on("error", () => {});
    socket.on("close", () => {
      if (this.socket === socket)
        this.drop(
          new RedisError(
            "unavailable",
            `The connection to Redis at ${describe(this.options.address)} closed.`,
          ),
        );
    });
    this.socket = socket;
    if (this.disposed) {
      this.drop(new RedisError("unavailable", "The Redis client was closed."));
      throw new RedisError("unavailable", "The Redis client was closed.");
    }
    try {
      const { password, username, db } = this.options;
      if (password !== undefined)
        await this.send(socket, username ? ["AUTH", username, password] : ["AUTH", password]);
      if (db) await this.send(socket, ["SELECT", db]);
    } catch (error) {
      this.drop(error as Error);
      if (error instanceof RedisError && error.code === "reply")
        throw new RedisError(
          "reply",
          `Redis refused the connection's set-up: ${error.message}`,
          error.prefix,
        );
      throw error;
    }
    return socket;
  }

  private send(socket: Socket, args: (string | number)[]): Promise<RedisReply> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.drop(new RedisError("unavailable", `Redis did not answer within ${this.commandTimeoutMs} ms.`));
      }, this.commandTimeoutMs);
      this.pending.push({ resolve, reject, timer });
      socket.write(encode(args));
    });
  }

  private onData(socket: Socket, chunk: Buffer): void {
    if (this.socket !== socket) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < this.needed) return;
    let data = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    let at = 0;
    try {
      while (at < data.length) {
        const parsed = this.parse(data, at);
        if (parsed instanceof Incomplete) {
          if (parsed.needed - at > this.maxReplyBytes)
            throw new RedisError("protocol", `A Redis reply is over ${this.maxReplyBytes} bytes.`);
          this.needed = parsed.needed - at;
          break;
        }
        at = parsed.end;
        this.needed = 1;
        const waiting = this.pending.shift();
        if (!waiting) throw new RedisError("protocol", "Redis sent a reply nothing asked for.");
        clearTimeout(waiting.timer);
        if (parsed.value instanceof RedisError) waiting.reject(parsed.value);
        else waiting.resolve(parsed.value);
      }
    } catch (error) {
      this.drop(error as Error);
      return;
    }
    data = data.subarray(at);
    this.chunks = data.length ? [data] : [];
    this.buffered = data.length;
  }

  /** One reply starting at `at`, or how many bytes it needs at least. */
  private parse(data: Buffer, at: number): { value: RedisReply | RedisError; end: number } | Incomplete {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd === -1) {
      if (data.length - at > 64 * 1024) throw new RedisError("protocol", "A Redis reply line is too long.");
      return new Incomplete(data.length + 1);
    }
    const type = data[at];
    const line = data.toString("utf8", at + 1, lineEnd);
    const next = lineEnd + 2;
    switch (type) {
      case 0x2b: // +
        return { value: line, end: next };
      case 0x2d: {
        // -
        const prefix = line.split(" ", 1)[0] ?? "";
        return { value: new RedisError("reply", line, prefix), end: next };
      }
      case 0x3a: // :
        return { value: this.integer(line), end: next };
      case 0x24: {
        // $
        const length = this.integer(line);
        if (length === -1) return { value: null, end: next };
        if (length < 0 || length > this.maxReplyBytes)
          throw new RedisError("protocol", `A Redis bulk string of ${length} bytes is out of bounds.`);
        const end = next + length + 2;
        if (data.length < end) return new Incomplete(end);
        return { value: data.toString("utf8", next, next + length), end };
      }
      case 0x2a: {
        // *
        const count = this.integer(line);
        if (count === -1) return { value: null, end: next };
        if (count < 0 || count > this.maxArrayLength)
          throw new RedisError("protocol", `A Redis array of ${count} elements is out of bounds.`);
        const items: RedisReply[] = [];
        let end = next;
        for (let i = 0; i < count; i++) {
          const item = this.parse(data, end);
          if (item instanceof Incomplete) return item;
          // An error inside an array (EXEC, scripts) is kept as its message.
          items.push(item.value instanceof RedisError ? item.value.message : item.value);
          end = item.end;
        }
        return { value: items, end };
      }
      default:
        throw new RedisError(
          "protocol",
          `Unknown RESP2 reply type ${JSON.stringify(String.fromCharCode(type ?? 0))}.`,
        );
    }
  }

  private integer(text: string): number {
    if (!/^-?\d{1,15}$/.test(text))
      throw new RedisError("protocol", `Bad RESP2 integer ${JSON.stringify(text.slice(0, 32))}.`);
    return Number(text);
  }

  /** Drops the connection: every command in flight fails with `error`. */
  private drop(error: Error): void {
    const socket = this.socket;
    this.socket = null;
    socket?.destroy();
    this.chunks = [];
    this.buffered = 0;
    this.needed = 1;
    for (const waiting of this.pending.splice(0)) {
      clearTimeout(waiting.timer);
      waiting.reject(error);
    }
  }
}

/** RESP2: an array of bulk strings. */
export function encode(args: (string | number)[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`*${args.length}\r\n`)];
  for (const arg of args) {
    const bytes = Buffer.from(String(arg), "utf8");
    parts.push(Buffer.from(`$${bytes.length}\r\n`), bytes, Buffer.from("\r\n"));
  }
  return Buffer.concat(parts);
}

function describe(address: RedisAddress): string {
  return "path" in address ? address.path : `${address.host}:${address.port}`;
}
