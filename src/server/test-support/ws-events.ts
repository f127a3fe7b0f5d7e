import type { ResponsesWS } from "openai/resources/responses/ws";

type AnyEvent = { type: string; [key: string]: unknown };

/**
 * Collects every server event of an SDK WebSocket client, so a test can wait for the next event
 * matching a condition without sleeping.
 */
export class EventLog {
  readonly events: AnyEvent[] = [];
  private waiters: { match: (e: AnyEvent) => boolean; from: number; resolve: (e: AnyEvent) => void }[] = [];
  readonly errors: Error[] = [];

  constructor(ws: ResponsesWS) {
    ws.on("event", (event) => this.push(event as unknown as AnyEvent));
    ws.on("error", (error) => this.errors.push(error as Error));
  }

  private push(event: AnyEvent): void {
    this.events.push(event);
    const index = this.events.length - 1;
    this.waiters = this.waiters.filter((w) => {
      if (index >= w.from && w.match(event)) {
        w.resolve(event);
        return false;
      }
      return true;
    });
  }

  /** Resolves with the first event at or after `from` (default: the next one) that matches. */
  next(match: (e: AnyEvent) => boolean, from = this.events.length): Promise<AnyEvent> {
    for (let i = from; i < this.events.length; i++)
      if (match(this.events[i]!)) return Promise.resolve(this.events[i]!);
    return new Promise((resolve) => this.waiters.push({ match, from, resolve }));
  }

  type(type: string, from?: number): Promise<AnyEvent> {
    return this.next((e) => e.type === type, from);
  }

  /** The next terminal event of a response. */
  end(from?: number): Promise<AnyEvent> {
    return this.next(
      (e) => ["response.completed", "response.incomplete", "response.failed"].includes(e.type),
      from,
    );
  }

  since(from: number): AnyEvent[] {
    return this.events.slice(from);
  }
}
