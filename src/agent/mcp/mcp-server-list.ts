import type { McpServerInfo } from "../../protocol/agent.js";

/** The MCP servers of a workspace and their states, for the faces that list them. */
export interface McpServerList {
  list(): McpServerInfo[];
  /** Calls `listener` after any server's state or tools change; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
}
