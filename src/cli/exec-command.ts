import type { HostClient, PromptProgress } from "../client-core/host-client.js";
import { promptProgressLabel } from "../client-core/prompt-progress-label.js";
import { SparkError } from "../protocol/errors.js";
import type { AgentFlags } from "./agent-flags.js";
import { EXIT_OUTPUT_CLOSED, OutputWatch } from "./closed-output.js";
import { formatDuration } from "./duration-option.js";
import { threadStartedLine } from "./exec-session.js";
import { attachTarget, connectHost } from "./host-target.js";
import { HostThread } from "./host-thread.js";
import { startLocalHost } from "./local-host-start.js";
import { EXIT_USAGE, readOutputSchema } from "./output-schema-file.js";
import { runPlain } from "./tui/plain-output.js";

/** `spark exec`'s exit status when `--timeout` ended the task (as timeout(1) exits). */
export const EXIT_TIMEOUT = 124;

/**
 * `spark exec`: one task, on this user's `spark serve` for the workspace or on an agent of its own.
 * Exits 0 when the turn completed, 1 when it failed (a limit ended it, or an error), 2 when the
 * `--output-schema` file cannot be used, 124 when `--timeout` ran out, 141 when its reader went away. `resumeId` continues that saved session
 * (`spark exec resume ID`) instead of starting a new one.
 */
export async function exec(flags: AgentFlags, prompt: string, resumeId?: string): Promise<number> {
  if (!prompt.trim())
    throw new SparkError(
      "invalid_request",
      'spark exec needs a task, e.g. spark exec "fix the failing import".',
    );
  let outputSchema: Record<string, unknown> | undefined;
  if (flags.outputSchema !== undefined) {
    try {
      outputSchema = await readOutputSchema(flags.outputSchema);
    } catch (error) {
      process.stderr.write(`spark: ${(error as Error).message}\n`);
      return EXIT_USAGE;
    }
  }
  const target = await attachTarget(flags);
  // A reader that goes away (`spark exec ... | head -1`) stops the turn quietly.
  using output = new OutputWatch({ stdout: process.stdout, stderr: process.stderr });
  if (target) {
    // On a running `spark serve`: the task is a thread there, live in the web app and the editor;
    // commands that need approval wait for an answer from one of them.
    const client = await connectHost(target);
    // Nobody watches `spark exec` to wait out a reconnect: a server gone mid-task ends it.
    let offStatus = () => {};
    const lost = new Promise<never>((_, reject) => {
      offStatus = client.on("status", (status) => {
        if (status === "reconnecting" || status === "closed")
          reject(new SparkError("server_error", `Lost the connection to spark serve at ${target.url}.`));
      });
    });
    try {
      const progress: ProgressFeed = (listener) => client.on("prompt", listener);
      return await Promise.race([
        execOn(client, flags, prompt, output, "others", resumeId, progress, outputSchema),
        lost,
      ]);
    } finally {
      offStatus();
      client.dispose();
    }
  }
  // Its own agent, behind the same agent host, reached in memory.
  await using local = await startLocalHost(flags, { mode: "exec" });
  // Nobody types while `spark exec` starts: its one task gets the tools of every MCP server that
  // starts (each within its startup timeout) rather than those that happen to be ready.
  await local.runtime.mcp.whenStarted();
  const client = await local.connect();
  try {
    const warmup = local.runtime.promptWarmup;
    const progress: ProgressFeed = (listener) => warmup?.on(listener) ?? (() => {});
    return await execOn(client, flags, prompt, output, "deny", resumeId, progress, outputSchema);
  } finally {
    client.dispose();
  }
}

/** Subscribes to how far the agent prompt's evaluation is; returns the unsubscribe function. */
type ProgressFeed = (listener: (progress: PromptProgress) => void) => () => void;

/** Runs the one task of `spark exec` as a new thread of the host `client` is connected to. */
async function execOn(
  client: HostClient,
  flags: AgentFlags,
  prompt: string,
  output: OutputWatch,
  approvals: "deny" | "others",
  resumeId: string | undefined,
  promptProgress: ProgressFeed,
  outputSchema: Record<string, unknown> | undefined,
): Promise<number> {
  const warming = process.stderr.isTTY === true && flags.prewarm;
  const say = (progress: { evaluated: number; total: number }) => {
    const label = promptProgressLabel(progress);
    process.stderr.write(`\r${label.charAt(0).toUpperCase()}${label.slice(1)}...\x1b[K`);
  };
  if (warming) say({ evaluated: 0, total: 0 });
  const off = warming ? promptProgress(say) : () => {};
  const thread = await HostThread.open(client, resumeId).finally(off);
  if (warming) process.stderr.write("\r\x1b[K");
  if (flags.json) process.stdout.write(threadStartedLine(thread.info));
  const interrupt = new AbortController();
  process.once("SIGINT", () => interrupt.abort());
  const timeout = flags.timeout === undefined ? undefined : AbortSignal.timeout(flags.timeout);
  try {
    const status = await runPlain(thread, {
      input: prompt,
      stdout: process.stdout,
      stderr: output.stderr,
      json: flags.json === true,
      toolChoice: flags.toolChoice,
      outputSchema,
      mode: flags.plan ? "plan" : "default",
      signal: AbortSignal.any([interrupt.signal, output.signal]),
      ...(timeout
        ? { timeout: { signal: timeout, label: `--timeout ${formatDuration(flags.timeout!)}` } }
        : {}),
      approvals,
    });
    if (output.closed) return EXIT_OUTPUT_CLOSED;
    if (timeout?.aborted && status !== "completed") return EXIT_TIMEOUT;
    return status === "completed" ? 0 : 1;
  } finally {
    thread.close();
  }
}
