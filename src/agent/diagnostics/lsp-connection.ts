import type { ChildProcessWithoutNullStreams } from "node:child_process";

/** A server message over this many bytes ends the connection: no answer we read is that large. */
export const LSP_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
/** The server's stderr kept for error messages: its last bytes. */
const STDERR_KEEP_BYTES = 4096;
const MAX_HEADER_BYTES = 1024;
const INCOMPLETE = Symbol("incomplete");

export type LspHandler = (method: string, params: unknown) => unknown;

/**
 * JSON-RPC 2.0 with LSP's `Content-Length` framing over a child's stdio: requests, notifications,
 * and answers to the server's own requests (`onRequest`). Every failure (a malformed or oversized
 * message, the process exiting) ends the connection and rejects what is pending with the reason,
 * the last lines of the server's stderr included.
 */
export class LspConnection {
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();
  private nextId = 1;
  private buffer: Buffer = Buffer.alloc(0);
  private stderr = "";
  private failure: Error | null = null;
  /** Settles (never rejects) with the reason once the connection has ended. */
  readonly ended: Promise<Error>;
  private end!: (error: Error) => void;

  constructor(
    private readonly child: ChildProcessWithoutNullStreams,
    private readonly handlers: { onNotification: LspHandler; onRequest: LspHandler },
  ) {
    this.ended = new Promise((resolve) => {
      this.end = resolve;
    });
    child.stdout.on("data", (chunk: Buffer) => this.receive(chunk));
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString("utf8")).slice(-STDERR_KEEP_BYTES);
    });
    child.stdin.on("error", (error) => this.fail(`its input closed (${error.message})`));
    child.on("error", (error) => this.fail(error.message));
    child.on("exit", (code, signal) => this.fail(`it exited (${signal ?? `code ${code}`})`));
  }

  get closed(): boolean {
    return this.failure !== null;
  }

  request(method: string, params: unknown): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.send({ jsonrpc: "2.0", id, method, params });
    });
  }

  notify(method: string, params: unknown): void {
    if (!this.failure) this.send({ jsonrpc: "2.0", method, params });
  }

  /** Ends the connection and the process (killed if it does not exit on its own within `graceMs`). */
  async close(graceMs: number): Promise<void> {
    const timer = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin.end();
      await this.ended;
    }
    clearTimeout(timer);
    this.fail("it was stopped");
  }

  private send(message: object): void {
    const body = Buffer.from(JSON.stringify(message), "utf8");
    this.child.stdin.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  }

  private receive(chunk: Buffer): void {
    if (this.failure) return;
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    try {
      for (let message = this.nextMessage(); message !== INCOMPLETE; message = this.nextMessage()) {
        this.dispatch(message);
        if (this.failure) return;
      }
    } catch (error) {
      this.fail((error as Error).message);
    }
  }

  /** The next whole message in the buffer, parsed; throws on a framing the connection cannot follow. */
  private nextMessage(): unknown {
    const headerEnd = this.buffer.indexOf("\r\n\r\n");
    if (headerEnd < 0) {
      if (this.buffer.length > MAX_HEADER_BYTES) throw new Error("it sent a header over 1 KiB");
      return INCOMPLETE;
    }
    const header = this.buffer.subarray(0, headerEnd).toString("ascii");
    const match = /^content-length: *(\d{1,10})$/im.exec(header);
    if (!match) throw new Error("it sent a message without Content-Length");
    const length = Number(match[1]);
    if (length > LSP_MAX_MESSAGE_BYTES) throw new Error(`it sent a message of ${length} bytes`);
    const start = headerEnd + 4;
    if (this.buffer.length < start + length) return INCOMPLETE;
    const body = this.buffer.subarray(start, start + length).toString("utf8");
    this.buffer = this.buffer.subarray(start + length);
    try {
      return JSON.parse(body);
    } catch {
      throw new Error("it sent a message that is not JSON");
    }
  }

  private dispatch(message: unknown): void {
    if (typeof message !== "object" || message === null)
      throw new Error("it sent a message that is not an object");
    const { id, method, params, result, error } = message as Record<string, unknown>;
    if (typeof method === "string") {
      if (id === undefined) this.handlers.onNotification(method, params);
      else if (typeof id !== "number" && typeof id !== "string")
        throw new Error("it sent a request with a bad id");
      else this.answer(id, method, params);
      return;
    }
    if (typeof id !== "number") return;
    const waiter = this.pending.get(id);
    if (!waiter) return;
    this.pending.delete(id);
    if (error !== undefined) {
      const text =
        typeof error === "object" && error !== null ? (error as { message?: unknown }).message : error;
      waiter.reject(new Error(`it answered with an error: ${String(text).slice(0, 300)}`));
    } else waiter.resolve(result);
  }

  private answer(id: number | string, method: string, params: unknown): void {
    try {
      this.send({ jsonrpc: "2.0", id, result: this.handlers.onRequest(method, params) ?? null });
    } catch (failure) {
      this.send({ jsonrpc: "2.0", id, error: { code: -32603, message: String(failure) } });
    }
  }

  private fail(why: string): void {
    if (this.failure) return;
    const tail = this.stderr.trim().split("\n").slice(-3).join(" | ").slice(-500);
    this.failure = new Error(tail ? `${why}; stderr: ${tail}` : why);
    for (const waiter of this.pending.values()) waiter.reject(this.failure);
    this.pending.clear();
    this.buffer = Buffer.alloc(0);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    this.end(this.failure);
  }
}
