import type { ResponsesWS } from "openai/resources/responses/ws";

export type AnyEvent = { type: string; [key: string]: unknown };

/** A response's terminal event. */
export function isEnd(event: AnyEvent): boolean {
  return ["response.completed", "response.incomplete", "response.failed"].includes(event.type);
}

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

  /** The events received so far, in order, a run of one type written once with its count. */
  summary(): string {
    const runs: [string, number][] = [];
    for (const { type } of this.events) {
      const last = runs.at(-1);
      if (last?.[0] === type) last[1]++;
      else runs.push([type, 1]);
    }
    return runs.map(([type, count]) => (count > 1 ? `${type} x${count}` : type)).join(", ");
  }

  /** The next terminal event of a response. */
  end(from?: number): Promise<AnyEvent> {
    return this.next(isEnd, from);
  }

  since(from: number): AnyEvent[] {
    return this.events.slice(from);
  }
}
