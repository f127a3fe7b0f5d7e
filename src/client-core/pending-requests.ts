import type { HostEvent } from "../protocol/agent.js";
import { HostClientError } from "./host-client-error.js";

/** The host's `ack` of a request: it took effect (on `thread_id`, when it acted on a thread). */
export type Ack = Extract<HostEvent, { type: "ack" }>;
type ErrorFrame = Extract<HostEvent, { type: "error" }>;

interface Pending {
  resolve: (ack: Ack) => void;
  reject: (error: HostClientError) => void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * Requests sent to the host and not answered yet, by `request_id`. The host answers each request
 * that carries an id with exactly one `ack` or one `error` carrying the same id (docs/PROTOCOL.md).
 */
export class PendingRequests {
  private readonly pending = new Map<string, Pending>();
  private lastId = 0;

  constructor(
    /** How long a request waits for its answer unless told otherwise. */
    private readonly timeoutMs: number,
  ) {}

  /** A `request_id` no request of this client used. */
  nextId(): string {
    return `r${++this.lastId}`;
  }

  /** Waits for the answer to the request sent with `requestId`; rejects with `timeout` after `timeoutMs`. */
  wait(requestId: string, timeoutMs = this.timeoutMs): Promise<Ack> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(requestId);
        reject(new HostClientError("timeout", "Spark did not answer in time."));
      }, timeoutMs);
      this.pending.set(requestId, { resolve, reject, timer });
    });
  }

  /** Resolves the request the ack names; an ack of a request no longer waiting is dropped. */
  ack(frame: Ack): void {
    this.take(frame.request_id)?.resolve(frame);
  }

  /**
   * Rejects the request the error names with `host_error`; false when it names none waiting (a
   * frame too broken to carry an id, or an answer past its timeout): the caller reports it.
   */
  error(frame: ErrorFrame): boolean {
    const entry = frame.request_id === undefined ? undefined : this.take(frame.request_id);
    entry?.reject(new HostClientError("host_error", frame.error.message, frame.error, frame.status));
    return entry !== undefined;
  }

  /** True while the request sent with `requestId` waits for its answer. */
  waiting(requestId: string): boolean {
    return this.pending.has(requestId);
  }

  /** Fails every waiting request (the connection they were sent on is gone). */
  failAll(error: HostClientError): void {
    const entries = [...this.pending.values()];
    this.pending.clear();
    for (const entry of entries) {
      clearTimeout(entry.timer);
      entry.reject(error);
    }
  }

  private take(requestId: string): Pending | undefined {
    const entry = this.pending.get(requestId);
    if (!entry) return undefined;
    this.pending.delete(requestId);
    clearTimeout(entry.timer);
    return entry;
  }
}
