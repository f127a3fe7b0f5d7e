import path from "node:path";
import { slashReview } from "../client-core/review-text.js";
import { SparkError } from "../protocol/errors.js";
import type { AgentFlags } from "./agent-flags.js";
import { attachTarget, attachUrl, connectHost, type HostTarget } from "./host-target.js";
import { keyFromFlags } from "./key-flags.js";
import { resumeHint } from "./resume-hint.js";
import { loadTui } from "./tui/load-tui.js";
import { StartupStatus } from "./tui/startup-status.js";
import { TuiThreads } from "./tui-threads.js";

/**
 * `spark [prompt]` and `spark resume`: the terminal UI, on this user's `spark serve` for the
 * workspace when one runs (and the flags leave the choice to Spark), else on an agent of its own.
 * Not on a terminal, a prompt runs as `spark exec` would.
 */
export async function interactive(flags: AgentFlags, prompt: string, resumeFile?: string): Promise<number> {
  if (!process.stdin.isTTY || !process.stdout.isTTY) {
    if (!prompt.trim()) {
      throw new SparkError(
        "invalid_request",
        'Not a terminal: pass the task as an argument, or use spark exec "...".',
      );
    }
    const { exec } = await import("./exec-command.js");
    return exec(flags, prompt);
  }
  const resumeId = resumeFile ? path.basename(resumeFile, ".jsonl") : undefined;
  const target = await attachTarget(flags);
  if (target)
    return attachedTui(target, resumeId ? { threadId: resumeId } : {}, prompt, flags.cd ?? process.cwd());
  const { localTui } = await import("./local-tui.js");
  return localTui(flags, prompt, resumeId);
}

/** `spark attach [URL]`: the newest session of the workspace on a running `spark serve`. */
export async function attach(
  url: string | undefined,
  flags: { apiKey?: string; apiKeyFile?: string; cd?: string },
): Promise<number> {
  const cwd = flags.cd ?? process.cwd();
  const apiKey = keyFromFlags(
    { key: flags.apiKey, file: flags.apiKeyFile },
    { flag: "--api-key", fileFlag: "--api-key-file", env: [] },
  );
  const target = await attachUrl(url, cwd, apiKey);
  return attachedTui(target, { newest: path.resolve(cwd) }, "", cwd);
}

/**
 * The terminal UI on a running `spark serve`: the model is loaded and warm already. Opens the
 * thread `open` names (a saved session's id, or the newest of a workspace, else a new one).
 * `/model` switches among the tiers the host lists, through the host.
 */
async function attachedTui(
  target: HostTarget,
  open: { threadId?: string; newest?: string },
  prompt: string,
  workspace: string,
): Promise<number> {
  const { runTui } = await loadTui();
  const client = await connectHost(target);
  const threads = new TuiThreads(client);
  try {
    const startup = new StartupStatus();
    // A server started moments ago may still be evaluating the agent prompt: say how far.
    const offPrompt = client.on("prompt", ({ evaluated, total, done }) => {
      if (!done) startup.set({ phase: "warming", evaluated, total });
    });
    const first = (async () => {
      const threadId = open.threadId ?? (open.newest ? (await client.list(open.newest))[0]?.id : undefined);
      const thread = await threads.open(threadId).finally(offPrompt);
      startup.set({ phase: "ready" });
      return thread;
    })();
    first.catch((error: unknown) =>
      startup.set({ phase: "failed", message: error instanceof Error ? error.message : String(error) }),
    );
    const { thread: last } = await runTui({
      thread: first,
      mcp: client,
      startup,
      ...(prompt.trim() ? { prompt: prompt.trim() } : {}),
      modelId: "",
      workspace: path.resolve(workspace),
      // As the host lists them (its `models` event, sent as the client connects).
      models: () => client.models,
      onModelChange: (model) => threads.changeModel(model),
      newThread: () => threads.open(),
      onFork: (itemId) => threads.fork(itemId),
      files: (threadId, query, limit) => client.workspaceFiles(threadId, query, limit),
      onDiff: (threadId) => client.sessionDiff(threadId),
      onReview: (threadId, args, onProgress) => slashReview(client, threadId, args, onProgress),
    });
    const failed = await first.then(
      () => false,
      () => true,
    );
    process.stdout.write(resumeHint(last));
    return failed ? 1 : 0;
  } finally {
    threads.close();
    client.dispose();
  }
}
