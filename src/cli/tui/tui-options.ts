import type { AgentThread } from "../../agent/agent-thread.js";

export interface TuiOptions {
  /** Creates a new thread (for /new); the first one is passed in. */
  newThread: () => Promise<AgentThread>;
  thread: AgentThread;
  modelId: string;
  /** Other models the user may switch to with /model (may be empty: then /model just shows the current one). */
  models?: string[];
  /** Switches to `model` (one of `models`); resolves with the thread to continue in. */
  onModelChange?: (model: string) => Promise<AgentThread>;
  /**
   * A first message, sent once the view is up (so its whole turn is shown). Default: none. A turn
   * started on `thread` before `runTui` is shown too, from the point the view opens.
   */
  prompt?: string;
  /** Default: process.stdin. */
  stdin?: NodeJS.ReadStream;
  /** Default: process.stdout. */
  stdout?: NodeJS.WriteStream;
}
