import type { ThreadView, ViewAction } from "../../../src/client-core/thread-view.js";
import type { McpServerInfo, RewindRestore } from "../../../src/protocol/agent.js";
import type { DecodedCatalog } from "../../../src/protocol/catalog.js";

/** The connection as the chat view shows it. */
export interface ConnectionState {
  status: "idle" | "starting" | "connecting" | "connected" | "reconnecting" | "failed";
  /** What to show: the server's address, or why it failed. */
  detail: string;
}

/** From the extension to the chat view. */
export type ToWebview =
  /** The whole view: on (re)load and when the thread changes. */
  | { type: "snapshot"; view: ThreadView; connection: ConnectionState }
  /** New actions for the view, each with the extension's clock (ms since the epoch) when it arrived. */
  | { type: "actions"; actions: { action: ViewAction; at: number }[] }
  | { type: "connection"; connection: ConnectionState }
  /** The agent host's MCP servers, whole: when the view loads and whenever the host lists them anew. */
  | { type: "mcp"; servers: readonly McpServerInfo[] }
  /** The agent host's skills and defined agents (for `/skills` and `/agents` typed in the view). */
  | { type: "catalog"; catalog: DecodedCatalog }
  | { type: "focus"; text?: string }
  /** A conversation rewind took this message back: it goes into the input, to edit and send again. */
  | { type: "refill"; text: string }
  /** The answer to the `files` query `id`: the workspace files that match best, best first. */
  | { type: "files"; id: number; files: string[] };

/** From the chat view to the extension. */
export type FromWebview =
  | { type: "ready" }
  /**
   * Enter: starts a turn, or steers the running one. Tab: queues it after the running turn. `plan`:
   * the Plan toggle is on (a turn it starts, and the thread's next ones, run in plan mode).
   */
  | { type: "send"; text: string; mode: "auto" | "queue"; plan: boolean }
  /** The input's text changed (type-ahead drafts). */
  | { type: "typing"; text: string }
  | { type: "interrupt" }
  | { type: "approval"; approvalId: string; approved: boolean }
  | { type: "patch"; itemId: string; path: string; action: "open" | "accept" | "reject" }
  /** Fork the thread from the turn that user message starts; the chat switches to the fork. */
  | { type: "fork"; itemId: string }
  /** Back to before user message `itemId`: its code, the conversation, or both (`thread.rewind`). */
  | { type: "rewind"; itemId: string; restore: RewindRestore }
  /** An `@` mention being typed: the workspace files matching `query` (answered by `files` with `id`). */
  | { type: "files"; id: number; query: string }
  | {
      type: "command";
      command: "spark.undo" | "spark.newThread" | "spark.resumeThread" | "spark.reconnect" | "spark.showLog";
    };
