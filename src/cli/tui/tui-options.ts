import type { McpServerInfo, SessionDiff } from "../../protocol/agent.js";
import type { DecodedCatalog } from "../../protocol/catalog.js";
import type { TerminalThread } from "../terminal-thread.js";
import type { StartupStatus } from "./startup-status.js";
import type { SavedSession } from "./tui-session.js";

export interface TuiOptions {
  /** Creates a new thread (for /new); the first one is passed in. */
  newThread: () => Promise<TerminalThread>;
  /**
   * The first thread, or a promise of it while the runtime starts (the model loads and warms up).
   * The view takes input at once either way: messages entered before the thread exists are shown
   * as queued and sent, in order and once each, when it resolves. A rejection is shown as an error.
   */
  thread: TerminalThread | Promise<TerminalThread>;
  /**
   * The agent host's MCP servers, for `/mcp` and the notice when one fails or stops: the client
   * core's HostClient (in-process or attached), or a promise of it while Spark starts. Default:
   * none (`/mcp` then lists no servers).
   */
  mcp?: McpServersFeed | Promise<McpServersFeed>;
  /** Start-up progress (shown in the status bar) and questions (answered with y/n). Default: none. */
  startup?: StartupStatus;
  modelId: string;
  /** The workspace, named in the status line until the thread names its own. Default: none. */
  workspace?: string;
  /** The saved session being resumed, shown at once while its thread starts. Default: none. */
  saved?: SavedSession;
  /**
   * The models the user may switch to with /model, as the agent host lists them now (in process:
   * the runtime's tiers; attached: the host's `models` event). One: /model just shows it. Default
   * (or empty): not known here; the agent host checks the name /model asks for.
   */
  models?: () => readonly string[];
  /**
   * Forks the current thread from the turn its user message `itemId` starts (default: the whole
   * conversation); resolves with the fork, which the view switches to. Default: `/fork` refused.
   */
  onFork?: (itemId?: string) => Promise<TerminalThread>;
  /** Switches to `model`; resolves with the thread to continue in. */
  onModelChange?: (model: string) => Promise<TerminalThread>;
  /**
   * `/review ARGS` in thread `threadId`: reviews its workspace's changes read-only (the host's
   * `thread.review`, see client-core/review-text.ts), telling `onProgress` each step, and resolves
   * with the findings as text. Default: `/review` refused.
   */
  onReview?: (threadId: string, args: string, onProgress: (message: string) => void) => Promise<string>;
  /**
   * The files of thread `threadId`'s workspace that match `query` best, best first (the `@` picker).
   * Default: no picker.
   */
  files?: (threadId: string, query: string, limit: number) => Promise<string[]>;
  /** `/diff`: what thread `threadId`'s session changed. Default: `/diff` refused. */
  onDiff?: (threadId: string) => Promise<SessionDiff>;
  /**
   * A first message, sent once the view is up (so its whole turn is shown). Default: none. A turn
   * started on `thread` before `runTui` is shown too, from the point the view opens.
   */
  prompt?: string;
  /**
   * Most frames drawn per second while the model streams: its tokens are folded in as they come
   * and drawn together. Default: 30. A terminal whose engine runs in the same process draws fewer,
   * since the engine needs the core more than the view needs frames.
   */
  maxFps?: number;
  /** Default: process.stdin. */
  stdin?: NodeJS.ReadStream;
  /** Default: process.stdout. */
  stdout?: NodeJS.WriteStream;
}

/** The part of the client core's HostClient the terminal lists MCP servers from. */
export interface McpServersFeed {
  readonly mcpServers: readonly McpServerInfo[];
  /** The host's skills and defined agents (`/skills`, `/agents`). Default: none. */
  readonly catalog?: DecodedCatalog;
  on(type: "mcp", listener: (servers: McpServerInfo[]) => void): () => void;
}
