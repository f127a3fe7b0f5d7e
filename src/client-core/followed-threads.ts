import type { ThreadInfo } from "../protocol/agent.js";
import type { StampedEvent } from "./thread-view.js";

/** Where a `thread.resume` continues a thread: after `after_seq` of `epoch`, or (-1) from its start. */
export interface ResumeCursor {
  after_seq: number;
  epoch?: string;
}

/** What the followed threads tell their owner. */
export interface FollowedThreadsListener {
  /** A new event of a followed thread, in order. */
  event(event: StampedEvent): void;
  /** Views of the thread start over (its next `thread.started`, or the `thread.history` reset). */
  reset(threadId: string): void;
  /** The thread must be resumed from `cursor` (the server restarted under it). */
  resume(threadId: string, cursor: ResumeCursor): void;
  log(line: string): void;
}

interface ThreadState {
  lastSeq: number;
  /** The host epoch `lastSeq` belongs to (null: none seen yet). */
  epoch: string | null;
  /** Waiting for the thread's replay from its start: everything before its `thread.started` is dropped. */
  resync: boolean;
  info: ThreadInfo | null;
}

/**
 * The threads a client follows and how far it has seen each: every event is delivered exactly once
 * and in order across reconnects. When the host cannot continue a thread (it restarted: another
 * epoch; or the events are no longer kept) the thread starts over, from its replay.
 */
export class FollowedThreads {
  private readonly threads = new Map<string, ThreadState>();

  constructor(private readonly listener: FollowedThreadsListener) {}

  /** The last sequence number seen of a thread (-1: none). */
  lastSeq(threadId: string): number {
    return this.threads.get(threadId)?.lastSeq ?? -1;
  }

  /** The thread's info as last announced; null when none was. */
  info(threadId: string): ThreadInfo | null {
    return this.threads.get(threadId)?.info ?? null;
  }

  /** Follows a thread from its start; the returned function undoes it (the resume failed). */
  followFromStart(threadId: string): () => void {
    const previous = this.threads.get(threadId);
    this.threads.set(threadId, { lastSeq: -1, epoch: null, resync: true, info: previous?.info ?? null });
    return () => {
      if (previous) this.threads.set(threadId, previous);
      else this.threads.delete(threadId);
    };
  }

  forget(threadId: string): void {
    this.threads.delete(threadId);
  }

  /** Every followed thread starts over: sequence numbers of another server mean nothing here. */
  restartAll(): void {
    for (const [threadId, state] of this.threads) {
      Object.assign(state, { resync: true, lastSeq: -1, epoch: null });
      this.listener.reset(threadId);
    }
  }

  /** Where to resume each followed thread on a new connection. */
  cursors(): [threadId: string, cursor: ResumeCursor][] {
    return [...this.threads].map(([threadId, state]) => [threadId, cursorOf(state)]);
  }

  /** Delivers a stamped event once, if it is of a followed thread (or the start of a new one). */
  accept(event: StampedEvent): void {
    let state = this.threads.get(event.thread_id);
    if (!state) {
      // A thread this client just started: its first event. Others' events are not followed.
      if (event.type !== "thread.started" || event.seq !== 0) return;
      state = { lastSeq: -1, epoch: null, resync: false, info: null };
      this.threads.set(event.thread_id, state);
    }
    if (event.type === "thread.started" || event.type === "thread.renamed") state.info = event.thread;
    if (event.type === "thread.history" && event.thread) state.info = event.thread;
    if (event.type === "thread.history" && event.reset) {
      // The host could not continue this client's events: its snapshot replaces what was seen.
      if (!state.resync) this.listener.reset(event.thread_id);
      Object.assign(state, { resync: false, lastSeq: event.seq, epoch: event.epoch });
      this.listener.event(event);
      return;
    }
    if (state.resync) {
      if (event.type !== "thread.started") return;
      Object.assign(state, { resync: false, lastSeq: -1, epoch: event.epoch });
    }
    if (state.epoch !== null && event.epoch !== state.epoch) {
      // Another epoch without a reset: a restarted server's events, numbered anew.
      this.restart(event.thread_id, state);
      return;
    }
    if (event.seq <= state.lastSeq) return;
    if (event.seq > state.lastSeq + 1 && state.lastSeq >= 0) {
      this.listener.log(
        `Events ${state.lastSeq + 1}-${event.seq - 1} of ${event.thread_id} were not received`,
      );
    }
    state.lastSeq = event.seq;
    state.epoch = event.epoch;
    this.listener.event(event);
  }

  private restart(threadId: string, state: ThreadState): void {
    this.listener.log(`${threadId}: the server restarted; replaying the thread from its start`);
    Object.assign(state, { resync: true, lastSeq: -1, epoch: null });
    this.listener.reset(threadId);
    this.listener.resume(threadId, cursorOf(state));
  }
}

function cursorOf(state: ThreadState): ResumeCursor {
  return state.resync
    ? { after_seq: -1 }
    : { after_seq: state.lastSeq, ...(state.epoch ? { epoch: state.epoch } : {}) };
}
