import WebSocket from "ws";
import type { HostEvent } from "../protocol/agent.js";
import type { HostRequest } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";

/** A request as sent by {@link HostLink.request}: the link adds the `request_id`. */
export type HostCall = HostRequest extends infer R
  ? R extends HostRequest
    ? Omit<R, "request_id">
    : never
  : never;

/** What the terminal needs of an agent-host connection. */
export interface HostLink {
  /** Sends `call`; resolves with its `ack` (the thread it acted on), rejects with its `error`. */
  request(call: HostCall): Promise<{ thread_id?: string }>;
  /** Every event the host sends; returns the unsubscribe function. */
  onEvent(listener: (event: HostEvent) => void): () => void;
  close(): Promise<void>;
}

export interface WebSocketHostLinkOptions {
  /** `ws://host:port/v1/agent` (or wss). */
  url: string;
  /** Sent as `Authorization: Bearer <key>`; none for a server started with `--no-auth`. */
  key?: string | null;
}

/**
 * An agent-host connection over one WebSocket, with request ids: each request's promise settles
 * with the `ack` or `error` naming it. A closed connection rejects what is still pending.
 */
export class WebSocketHostLink implements HostLink {
  private readonly listeners = new Set<(event: HostEvent) => void>();
  private readonly pending = new Map<
    string,
    { resolve: (ack: { thread_id?: string }) => void; reject: (error: Error) => void }
  >();
  private nextId = 1;

  private constructor(private readonly socket: WebSocket) {
    socket.on("message", (data) => this.onMessage(String(data)));
    socket.on("close", () => this.failPending(new SparkError("server_error", "The agent host went away.")));
    socket.on("error", (error) => this.failPending(error));
  }

  static async connect(options: WebSocketHostLinkOptions): Promise<WebSocketHostLink> {
    const socket = new WebSocket(options.url, {
      ...(options.key ? { headers: { Authorization: `Bearer ${options.key}` } } : {}),
    });
    await new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
      socket.once("unexpected-response", (_request, response) =>
        reject(
          new SparkError(
            response.statusCode === 401 ? "unauthorized" : "server_error",
            `The agent host at ${options.url} refused the connection (HTTP ${response.statusCode}).`,
          ),
        ),
      );
    });
    return new WebSocketHostLink(socket);
  }

  request(call: HostCall): Promise<{ thread_id?: string }> {
    const id = `t${this.nextId++}`;
    return new Promise((resolve, reject) => {
      if (this.socket.readyState !== WebSocket.OPEN) {
        reject(new SparkError("server_error", "The agent host connection is closed."));
        return;
      }
      this.pending.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ ...call, request_id: id }));
    });
  }

  onEvent(listener: (event: HostEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise<void>((resolve) => this.socket.once("close", () => resolve()));
    this.socket.close();
    await closed;
  }

  private onMessage(text: string): void {
    const event = JSON.parse(text) as HostEvent;
    if (event.type === "ack" || (event.type === "error" && event.request_id !== undefined)) {
      const waiting = this.pending.get(event.request_id!);
      this.pending.delete(event.request_id!);
      if (event.type === "ack") waiting?.resolve(event.thread_id ? { thread_id: event.thread_id } : {});
      else
        waiting?.reject(
          new SparkError(event.error.code, event.error.message, {
            ...(event.error.param ? { param: event.error.param } : {}),
          }),
        );
      if (waiting) return;
    }
    for (const listener of this.listeners) listener(event);
  }

  private failPending(error: Error): void {
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }
}
