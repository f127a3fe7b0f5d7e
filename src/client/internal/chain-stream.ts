import type { ResponseObject } from "../../protocol/responses.js";
import { ClientError } from "../client-error.js";
import type { ResponseStream, ServerEvent } from "../response-stream.js";
import type { SteerOutcome } from "../steer-outcome.js";

/** What a transport does for the stream it runs. */
export interface StreamDriver {
  cancel(): void;
  steer(input: string): Promise<SteerOutcome>;
}

/**
 * The transport-agnostic half of a {@link ResponseStream}: a buffer of events between the transport
 * (which pushes) and one consumer (which iterates), and the `final` promise. Once settled it
 * ignores whatever a transport still pushes, so late events of a cancelled run are dropped.
 */
export class ChainStream implements ResponseStream {
  private driver: StreamDriver | null = null;
  private readonly queue: ServerEvent[] = [];
  private wake: (() => void) | null = null;
  private ending: { error: ClientError | null } | null = null;
  private iterated = false;
  private detached = false;
  private cancelRequested = false;
  private settled = false;
  private readonly ids: string[] = [];
  private readonly deferredFinal = deferred<ResponseObject>();
  private readonly deferredStarted = deferred<ResponseObject>();
  private readonly signal: AbortSignal | undefined;
  private readonly onAbort = () => this.cancel();

  constructor(
    /** The client that made it, so a stream from another client is refused. */
    readonly owner: object,
    signal?: AbortSignal,
  ) {
    this.signal = signal;
    signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  get final(): Promise<ResponseObject> {
    return this.deferredFinal.promise;
  }

  get started(): Promise<ResponseObject> {
    return this.deferredStarted.promise;
  }

  get responseId(): string | undefined {
    return this.ids.at(-1);
  }

  get responseIds(): readonly string[] {
    return this.ids;
  }

  get done(): boolean {
    return this.settled;
  }

  /** Set by the transport that runs the stream; a fallback hands it to another. */
  attach(driver: StreamDriver): void {
    this.driver = driver;
    if (this.cancelRequested && !this.settled) driver.cancel();
  }

  steer(input: string): Promise<SteerOutcome> {
    if (this.settled || !this.driver) {
      return Promise.resolve({
        status: "failed",
        code: "response_already_completed",
        message: "The stream has already ended.",
      });
    }
    // A steer would start a successor, undoing the cancel.
    if (this.cancelRequested) {
      return Promise.resolve({
        status: "failed",
        code: "response_not_active",
        message: "The response is being cancelled.",
      });
    }
    return this.driver.steer(input);
  }

  cancel(): void {
    if (this.settled || this.cancelRequested) return;
    this.cancelRequested = true;
    this.driver?.cancel();
  }

  push(event: ServerEvent): void {
    if (this.settled) return;
    if (event.type === "response.created") {
      this.ids.push(event.response.id);
      this.deferredStarted.resolve(event.response);
    }
    if (this.detached) return;
    this.queue.push(event);
    this.wakeConsumer();
  }

  complete(response: ResponseObject): void {
    if (!this.settle()) return;
    this.deferredStarted.resolve(response);
    this.deferredFinal.resolve(response);
    this.ending = { error: null };
    this.wakeConsumer();
  }

  fail(error: ClientError): void {
    if (!this.settle()) return;
    this.deferredStarted.reject(error);
    this.deferredFinal.reject(error);
    this.ending = { error };
    this.wakeConsumer();
  }

  [Symbol.asyncIterator](): AsyncIterator<ServerEvent> {
    if (this.iterated)
      throw new ClientError("invalid_request", "A response stream can be iterated only once.");
    this.iterated = true;
    return {
      next: () => this.next(),
      return: async () => {
        this.detached = true;
        this.queue.length = 0;
        this.cancel();
        return { done: true, value: undefined };
      },
    };
  }

  private async next(): Promise<IteratorResult<ServerEvent>> {
    for (;;) {
      const event = this.queue.shift();
      if (event) return { done: false, value: event };
      const ending = this.ending;
      if (ending) {
        // Thrown once; a consumer that goes on reading after the error sees the end.
        const error = ending.error;
        ending.error = null;
        if (error) throw error;
        return { done: true, value: undefined };
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    this.signal?.removeEventListener("abort", this.onAbort);
    return true;
  }

  private wakeConsumer(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

/** A promise settled from outside; its rejection counts as handled so nobody awaiting it is fine. */
function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}
