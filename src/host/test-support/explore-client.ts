import type { EventEmitter } from "node:events";
import WebSocket from "ws";
import { emptyView, reduceView, type StampedEvent, type ThreadView } from "../../client-core/thread-view.js";
import type { HostEvent } from "../../protocol/agent.js";

/**
 * One face of the host explorer: a raw WebSocket client that keeps, per thread it follows, the
 * client-core view fed the events it received (across reconnects, as a face does) and every
 * stamped event in arrival order. Requests carry a `request_id` and are awaited to their `ack` or
 * `error`, within a deadline (a request never answered is a defect the explorer reports).
 */

/** How long any one awaited thing may take before the explorer calls it a hang (default). */
export const EXPLORE_DEADLINE_MS = 15_000;

/** Requests whose ack means the connection follows the acked thread. */
const SUBSCRIBING = new Set(["thread.start", "thread.resume", "thread.fork"]);

export type Answer = { type: "ack"; thread_id?: string } | { type: "error"; code: string; message: string };

export class ExploreClient {
  ws: WebSocket | null = null;
  /** Views kept across reconnects, by thread id. */
  readonly views = new Map<string, ThreadView>();
  /** Stamped events received, by thread, in arrival order (every connection). */
  readonly received = new Map<string, StampedEvent[]>();
  /** Threads followed on the current connection (subscribed by start, resume or fork). */
  readonly subscribed = new Set<string>();
  /** Threads this client follows, kept across connections (resumed on reconnect). */
  readonly following = new Set<string>();
  /** Threads announced deleted to this client. */
  readonly deleted = new Set<string>();
  private requests = 0;
  /** Requests waiting for their answer: whether an ack subscribes this connection, and the waiter. */
  private readonly answers = new Map<string, { subscribes: boolean; resolve: (answer: Answer) => void }>();

  constructor(
    readonly name: string,
    private readonly url: string,
    private readonly changes: EventEmitter,
    /** See {@link EXPLORE_DEADLINE_MS}. */
    private readonly deadlineMs: number = EXPLORE_DEADLINE_MS,
  ) {}

  get connected(): boolean {
    return this.ws !== null;
  }

  /** Opens a connection and resumes every followed thread from the last event its view holds. */
  async connect(): Promise<void> {
    const ws = new WebSocket(this.url);
    ws.on("message", (data) => this.onEvent(JSON.parse(String(data)) as HostEvent));
    ws.on("error", () => {});
    ws.on("close", () => {
      if (this.ws === ws) this.dropConnection();
    });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
    });
    this.ws = ws;
    this.changes.emit("change");
    for (const threadId of [...this.following]) {
      if (this.deleted.has(threadId)) continue;
      const answer = await this.resume(threadId);
      // Deleted while this face was away: it could not hear of it but by this answer.
      if (answer.type === "error" && answer.code === "not_found") {
        this.following.delete(threadId);
        this.deleted.add(threadId);
      } else if (answer.type === "error")
        throw new Error(`${this.name}: resume of ${threadId} on reconnect: ${answer.message}`);
    }
  }

  /** `thread.resume` from the view's last event (and epoch), as a reconnecting face sends it. */
  resume(threadId: string): Promise<Answer> {
    const view = this.views.get(threadId);
    return this.request({
      type: "thread.resume",
      thread_id: threadId,
      ...(view && view.lastSeq >= 0 ? { after_seq: view.lastSeq, epoch: view.epoch } : {}),
    });
  }

  /** Cuts the connection without a close handshake (a laptop lid, a dropped network). */
  disconnect(): void {
    const ws = this.ws;
    if (!ws) return;
    this.dropConnection();
    ws.terminate();
  }

  /** Closes the connection cleanly. */
  close(): void {
    const ws = this.ws;
    if (!ws) return;
    this.dropConnection();
    ws.close();
  }

  /** Sends one request and resolves with its answer (rejects past the deadline). */
  request(body: { type: string; [key: string]: unknown }): Promise<Answer> {
    const ws = this.ws;
    if (!ws) return Promise.reject(new Error(`${this.name} is not connected`));
    const id = `${this.name}-${++this.requests}`;
    return new Promise<Answer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.answers.delete(id);
        reject(new Error(`${this.name}: no answer to ${JSON.stringify(body)} within ${this.deadlineMs} ms`));
      }, this.deadlineMs);
      this.answers.set(id, {
        subscribes: SUBSCRIBING.has(body.type),
        resolve: (answer) => {
          clearTimeout(timer);
          resolve(answer);
        },
      });
      ws.send(JSON.stringify({ ...body, request_id: id }));
    });
  }

  private dropConnection(): void {
    this.ws = null;
    this.subscribed.clear();
    // A request in flight is never answered now: it is answered as the lost connection it is.
    for (const [id, waiting] of [...this.answers]) {
      this.answers.delete(id);
      waiting.resolve({ type: "error", code: "disconnected", message: "the connection was lost" });
    }
    this.changes.emit("change");
  }

  private onEvent(event: HostEvent): void {
    if (event.type === "ack" || event.type === "error") {
      const id = event.request_id;
      const waiting = id === undefined ? undefined : this.answers.get(id);
      if (id !== undefined && waiting) {
        this.answers.delete(id);
        if (event.type === "ack") {
          const threadId = event.thread_id;
          if (threadId && waiting.subscribes) {
            this.subscribed.add(threadId);
            this.following.add(threadId);
          }
          waiting.resolve({ type: "ack", ...(threadId ? { thread_id: threadId } : {}) });
        } else waiting.resolve({ type: "error", code: event.error.code, message: event.error.message });
      }
    } else if (event.type === "thread.deleted") {
      this.deleted.add(event.thread_id);
      this.following.delete(event.thread_id);
      this.subscribed.delete(event.thread_id);
    } else if ("seq" in event) {
      const list = this.received.get(event.thread_id) ?? [];
      list.push(event);
      this.received.set(event.thread_id, list);
      const view = this.views.get(event.thread_id) ?? emptyView(event.thread_id);
      this.views.set(event.thread_id, reduceView(view, event, Date.now()));
    }
    this.changes.emit("change");
  }
}
