import WebSocket from "ws";

type ServerEvent = { type: string; [key: string]: unknown };

/**
 * A bare Responses WebSocket connection for measurements: no reconnects or fallbacks, just frames
 * and the time each event arrived.
 */
export class BenchSocket implements AsyncDisposable {
  private queue: { event: ServerEvent; at: number }[] = [];
  private waiter: (() => void) | null = null;
  /** The type of the last event read, for error messages. */
  private last: string | undefined;

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => {
      this.queue.push({ event: JSON.parse(String(data)) as ServerEvent, at: performance.now() });
      this.waiter?.();
    });
  }

  /** Connects as Spark's own client and the openai SDK do, without permessage-deflate. */
  static async open(url: string): Promise<BenchSocket> {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    return new BenchSocket(ws);
  }

  send(event: object): number {
    this.ws.send(JSON.stringify(event));
    return performance.now();
  }

  /** The next event, with its arrival time; a server silent for `timeoutMs` is an error, not a hang. */
  async next(timeoutMs = 30_000): Promise<{ event: ServerEvent; at: number }> {
    for (;;) {
      const next = this.queue.shift();
      if (next) {
        this.last = next.event.type;
        return next;
      }
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve, reject) => {
        this.waiter = resolve;
        timer = setTimeout(
          () => reject(new Error(`bench: no event for ${timeoutMs} ms (last: ${this.last ?? "none"})`)),
          timeoutMs,
        );
      }).finally(() => clearTimeout(timer));
      this.waiter = null;
    }
  }

  /** Events until the response ends; throws on a failed response or an error event. */
  async untilDone(): Promise<{ event: ServerEvent; at: number }[]> {
    const events: { event: ServerEvent; at: number }[] = [];
    for (;;) {
      const next = await this.next();
      events.push(next);
      const type = next.event.type;
      if (type === "error" || type === "response.failed")
        throw new Error(`bench: ${JSON.stringify(next.event)}`);
      if (type === "response.completed" || type === "response.incomplete") return events;
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.ws.close();
  }
}
