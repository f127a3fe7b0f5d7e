import type { AgentThread } from "../agent/agent-thread.js";
import type { ThreadInfo, ThreadItem } from "../protocol/agent.js";
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
  /** Deletes a thread's transcript; false if there was none. The host never deletes a running thread. */
  remove(threadId: string): Promise<boolean>;
  /**
   * The models (tiers) a thread may switch to with `thread.set_model`. Default: none (the request
   * is refused).
   */
  models?(): readonly string[];
  /** The host let an idle thread go (it stays resumable from its transcript). Default: nothing. */
  release?(threadId: string): void;
}
