import type {
  AgentMode,
  RewindRestore,
  SubAgentInfo,
  ThreadEvent,
  ThreadInfo,
  ThreadItem,
} from "../protocol/agent.js";
import type { TurnToolChoice } from "../protocol/agent-requests.js";

/**
 * What the terminal (the interactive view and `spark exec`) does with a thread. An in-process
 * AgentThread has this surface, and so has a HostThread: a thread on an agent host, watched and
 * steered from the other faces too.
 */
export interface TerminalThread {
  readonly info: ThreadInfo;
  /** The model (tier) its turns run on. */
  readonly model: string;
  /** A turn is running. */
  readonly busy: boolean;
  /** The items so far (a resumed session's included). */
  readonly history: readonly ThreadItem[];
  readonly subAgents: SubAgentInfo[];
  /** Subscribes to the thread's events; returns the unsubscribe function. */
  on(listener: (event: ThreadEvent) => void): () => void;
  /** Enter: starts a turn when idle; while a turn runs, steers it. */
  submit(input: string): void;
  /** Tab: runs `input` as the next turn once the current one ends. */
  enqueue(input: string): void;
  /** Starts a turn (in `mode`, which becomes the thread's); resolves when it (and anything queued behind it) has finished. */
  startTurn(
    input: string,
    options?: {
      toolChoice?: TurnToolChoice | undefined;
      mode?: AgentMode | undefined;
      /** The JSON Schema the turn's answer conforms to (`spark exec --output-schema`). */
      outputSchema?: Record<string, unknown> | undefined;
    },
  ): Promise<void>;
  /** The mode of the next turns (Shift+Tab in the terminal toggles plan mode). */
  readonly mode: AgentMode;
  setMode(mode: AgentMode): void;
  steer(input: string): void;
  interrupt(): void;
  /** Type-ahead: the message being typed, as a draft of the next turn. */
  draft(text: string): Promise<unknown>;
  /** Answers a pending approval; false when none by that id is pending. */
  respondToApproval(approvalId: string, approved: boolean): boolean;
  /** Reverts the last applied patch; the files restored (none when there was nothing to undo). */
  undo(): Promise<string[]>;
  /**
   * Goes back to just before the turn started by user message `itemId` (`thread.rewind`): the files
   * restored and the message's text. Throws a SparkError when refused (nothing changed then).
   */
  rewind(itemId: string, restore: RewindRestore): Promise<{ paths: string[]; text: string }>;
  /**
   * `/compact [focus]`: compacts the older turns now, keeping `focus` in view; the thread says how
   * it went (a notice, `context.updated`). Throws a SparkError while a turn runs.
   */
  compact(focus?: string): Promise<unknown>;
  cancelSubAgent(id: string): boolean;
  cancelSubAgents(): void;
  /** Resolves when no turn is running. */
  whenIdle(): Promise<void>;
  /** Resolves when no turn and no sub-agent is running. */
  whenSettled(): Promise<void>;
}
