import path from "node:path";
import { readSession, sessionsDir } from "../agent/transcript.js";
import type { HostClient } from "../client-core/host-client.js";
import { slashReview } from "../client-core/review-text.js";
import { type LoadedConfig, loadConfig } from "../config/spark-config.js";
import type { LocalAgentHost } from "../runtime/local-agent-host.js";
import type { AgentFlags } from "./agent-flags.js";
import type { HostThread } from "./host-thread.js";
import { resumeHint } from "./resume-hint.js";
import { startingTier } from "./starting-tier.js";
import { loadTui } from "./tui/load-tui.js";
import { StartupStatus } from "./tui/startup-status.js";
import type { SavedSession } from "./tui/tui-session.js";
import { TuiThreads } from "./tui-threads.js";

/** Frames per second at most while the model streams: the engine shares this process's cores. */
const IN_PROCESS_MAX_FPS = 15;

interface Started {
  local: LocalAgentHost;
  client: HostClient;
  threads: TuiThreads;
  first: HostThread;
}

/**
 * The terminal UI on an agent of this process. The view is drawn first and takes input at once;
 * the engine is imported and started behind it (model load, pre-warm), and messages typed
 * meanwhile are sent once it is ready. `resumeId` continues a saved session.
 */
export async function localTui(
  flags: AgentFlags,
  prompt: string,
  resumeId: string | undefined,
): Promise<number> {
  // A config file that cannot be read is an error before the view opens (reading it takes no time).
  const config = await loadConfig({ cwd: flags.cd ?? process.cwd(), env: process.env });
  const { mountTui } = await loadTui();
  // A resumed session's history is on screen at once; the model takes its time to load.
  const saved = resumeId ? await savedSession(resumeId) : null;
  const startup = new StartupStatus();
  const quit = new AbortController();
  let viewDrawn = () => {};
  const drawn = new Promise<void>((resolve) => {
    viewDrawn = resolve;
  });
  const starting = drawn.then(() => startSession(flags, startup, quit.signal, resumeId, config));
  // A start that fails is shown by the view (and makes the exit status 1); quitting is no failure.
  let failed = false;
  starting.catch(() => {
    failed = !quit.signal.aborted;
  });
  // Its failure is shown through the first thread; this promise must not count as unhandled.
  const mcpFeed = starting.then((started) => started.client);
  mcpFeed.catch(() => {});
  let models: readonly string[] = [];
  const tui = mountTui({
    thread: starting.then((started) => {
      models = started.local.runtime.models;
      return started.first;
    }),
    // The MCP servers of the agent host (/mcp), once it runs.
    mcp: mcpFeed,
    startup,
    ...(prompt.trim() ? { prompt: prompt.trim() } : {}),
    // Until the thread has started (then its own): the tier it will start on, by the same name.
    modelId: startingTier(flags, config),
    workspace: path.resolve(flags.cd ?? process.cwd()),
    ...(saved ? { saved } : {}),
    models: () => models,
    maxFps: IN_PROCESS_MAX_FPS,
    // Both are offered only once the first thread is there, so `starting` has resolved.
    onModelChange: async (model) => (await starting).threads.changeModel(model),
    newThread: async () => (await starting).threads.open(),
    onFork: async (itemId) => (await starting).threads.fork(itemId),
    files: async (threadId, query, limit) => (await starting).client.workspaceFiles(threadId, query, limit),
    onDiff: async (threadId) => (await starting).client.sessionDiff(threadId),
    // The host's thread.review, as attached: one way to review, in process or not.
    onReview: async (threadId, args, onProgress) =>
      slashReview((await starting).client, threadId, args, onProgress),
  });
  // The prompt box is on the screen (Ink draws the first frame as it mounts): now the engine.
  viewDrawn();
  const { thread: last } = await tui.exited;
  // Quitting during the start stops it at its next step (a model load in progress finishes first).
  quit.abort();
  startup.answer(false);
  const started = await starting.catch(() => null);
  if (!started) return failed ? 1 : 0;
  started.threads.close();
  started.client.dispose();
  // Stops the sub-agents still working (quietly: no turn starts for their ends), saves transcripts.
  await started.local.dispose();
  process.stdout.write(resumeHint(last));
  return 0;
}

/**
 * Imports and starts the agent (model load, pre-warm) behind its in-memory agent host, and opens
 * the first thread (a saved session's, with `resumeId`).
 */
async function startSession(
  flags: AgentFlags,
  startup: StartupStatus,
  signal: AbortSignal,
  resumeId: string | undefined,
  config: LoadedConfig,
): Promise<Started> {
  try {
    const { startLocalHost } = await import("./local-host-start.js");
    signal.throwIfAborted();
    const local = await startLocalHost(flags, { mode: "interactive", startup, signal, config });
    // Quitting while it warms up closes the runtime at once: the pre-warm stops with it.
    const onQuit = () => void local.dispose();
    signal.addEventListener("abort", onQuit, { once: true });
    let client: HostClient | null = null;
    try {
      signal.throwIfAborted();
      startup.set({ phase: "warming" });
      // The runtime began evaluating the agent prompt as the model loaded: how far it is.
      local.runtime.promptWarmup?.on(({ evaluated, total, done }) => {
        if (!done) startup.set({ phase: "warming", evaluated, total });
      });
      const { evaluated = 0, total = 0 } = local.runtime.promptWarmup?.progress ?? {};
      if (total > 0) startup.set({ phase: "warming", evaluated, total });
      client = await local.connect();
      const threads = new TuiThreads(client);
      const first = await threads.open(resumeId);
      signal.throwIfAborted();
      startup.set({ phase: "ready" });
      return { local, client, threads, first };
    } catch (error) {
      client?.dispose();
      await local.dispose();
      throw error;
    } finally {
      signal.removeEventListener("abort", onQuit);
    }
  } catch (error) {
    startup.set({ phase: "failed", message: error instanceof Error ? error.message : String(error) });
    throw error;
  }
}

/** What a saved session's transcript holds, for the view to show while it starts; null if unreadable. */
async function savedSession(id: string): Promise<SavedSession | null> {
  try {
    const { thread, items } = await readSession(path.join(sessionsDir(), `${id}.jsonl`));
    return { info: thread, items };
  } catch {
    // The start reports a session that cannot be resumed, in its own words.
    return null;
  }
}
