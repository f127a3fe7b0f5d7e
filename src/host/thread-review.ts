import type { AgentThread } from "../agent/agent-thread.js";
import type { HostEvent } from "../protocol/agent.js";
import type { HostRequest } from "../protocol/agent-requests.js";
import { SparkError } from "../protocol/errors.js";
import type { HostThreadSource } from "./host-thread-source.js";

type ReviewRequest = Extract<HostRequest, { type: "thread.review" }>;

/**
 * `thread.review` on one thread, one at a time per thread and never beside its turn: the source's
 * reviewer reads the diff in the thread's workspace and runs a read-only review thread on the
 * thread's model. Progress and the findings go to the client that asked (`answer`); the host acks
 * after them.
 */
export class ThreadReviews {
  /** Threads with a review running, by id. */
  private readonly running = new Set<string>();

  constructor(private readonly source: HostThreadSource) {}

  async review(
    thread: AgentThread,
    request: ReviewRequest,
    answer: (event: HostEvent) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const review = this.source.review?.bind(this.source);
    if (!review) throw new SparkError("invalid_request", "This host cannot review changes.");
    const threadId = thread.info.id;
    if (thread.busy)
      throw new SparkError("response_in_progress", "A turn is running; review once it ends.", {
        param: "thread_id",
      });
    if (this.running.has(threadId))
      throw new SparkError("response_in_progress", "A review of this session is running; wait for it.", {
        param: "thread_id",
      });
    this.running.add(threadId);
    const ids = { request_id: request.request_id, thread_id: threadId };
    try {
      const result = await review(thread, request.target ?? { kind: "uncommitted" }, {
        onProgress: (message) => answer({ type: "review.progress", ...ids, message }),
        signal,
      });
      answer({ type: "thread.review", ...ids, ...result });
    } finally {
      this.running.delete(threadId);
    }
  }
}
