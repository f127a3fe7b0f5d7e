import type { AgentThread } from "../agent/agent-thread.js";
import type { ReviewReport, ReviewTarget, ThreadInfo, ThreadItem } from "../protocol/agent.js";
import type { ThreadMcpServer } from "../protocol/agent-requests.js";

/** Where the agent host gets its threads, and where their transcripts are kept. */
export interface HostThreadSource {
  /**
   * A new thread; with `worktree`, in a git worktree of the host's repository (`thread.start
   * {worktree}`), or an error saying why not; with `mcpServers`, using those too (`thread.start
   * {mcp_servers}`).
   */
  create(options?: { worktree?: { name?: string }; mcpServers?: ThreadMcpServer[] }): Promise<AgentThread>;
  /** A saved session continued under its id, or null if there is none. */
  resume(threadId: string): Promise<AgentThread | null>;
  /** A new thread continuing `items` under `info` (`thread.fork`). Default: none (refused). */
  fork?(info: ThreadInfo, items: ThreadItem[]): Promise<AgentThread>;
  /** Saved sessions, newest first. */
  list(): Promise<ThreadInfo[]>;
  /** Renames a thread (saved or live) in its transcript; the updated info, or null if there is none. */
  rename(threadId: string, title: string): Promise<ThreadInfo | null>;
  /**
   * Saves a live thread's info (its mode and model, switched between turns) in its transcript, so
   * that a later `thread.resume` finds them. Default: nothing (the info is saved with each turn).
   */
  saveInfo?(thread: AgentThread): Promise<void>;
  /** Deletes a thread's transcript; false if there was none. The host never deletes a running thread. */
  remove(threadId: string): Promise<boolean>;
  /**
   * The models (tiers) a thread may switch to with `thread.set_model`. Default: none (the request
   * is refused).
   */
  models?(): readonly string[];
  /**
   * Reviews `target` in the thread's workspace, read-only, on the thread's model (`thread.review`).
   * Default: none (the request is refused). The host refuses it while a turn runs.
   */
  review?(thread: AgentThread, target: ReviewTarget, options: HostReviewOptions): Promise<HostReview>;
  /** The host let an idle thread go (it stays resumable from its transcript). Default: nothing. */
  release?(threadId: string): void;
}

export interface HostReviewOptions {
  /** A step of the review, for a person (`review.progress`). */
  onProgress: (message: string) => void;
  /** Aborted when the client that asked goes away. */
  signal: AbortSignal;
}

/** A review's findings and its notes for a person (dropped findings, a cut diff, nothing to review). */
export type HostReview = ReviewReport & { notes: string[] };
