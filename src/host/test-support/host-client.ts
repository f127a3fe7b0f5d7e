import WebSocket from "ws";

export type HostTestEvent = { type: string; seq?: number; thread_id?: string; [key: string]: unknown };

export interface HostTestClient {
  ws: WebSocket;
  /** Every event received so far, in order. */
  events: HostTestEvent[];
  send(message: object): void;
  /** The first event matching `match` at index `from` (default: from now on) or later. */
  next(match: (e: HostTestEvent) => boolean, from?: number): Promise<HostTestEvent>;
}

/** A raw WebSocket client of the agent host that records events and waits for them. */
export async function connectHost(url: string, protocols?: string[]): Promise<HostTestClient> {
  const ws = new WebSocket(url, protocols);
  const events: HostTestEvent[] = [];
  const waiters: {
    match: (e: HostTestEvent) => boolean;
    from: number;
    resolve: (e: HostTestEvent) => void;
  }[] = [];
  ws.on("message", (data) => {
    const event = JSON.parse(String(data)) as HostTestEvent;
    events.push(event);
    for (const waiter of [...waiters]) {
      if (events.length - 1 >= waiter.from && waiter.match(event)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return {
    ws,
    events,
    send: (message) => ws.send(JSON.stringify(message)),
    next: (match, from = events.length) => {
      const found = events.slice(from).find(match);
      return found
        ? Promise.resolve(found)
        : new Promise<HostTestEvent>((resolve) => waiters.push({ match, from, resolve }));
    },
  };
}
