import { spawn } from "node:child_process";
import { z } from "zod";
import type { SandboxedSpawn } from "../sandbox/command-sandbox.js";
import { OutputCapture } from "./internal/output-capture.js";
import { parametersOf, type Tool, ToolError } from "./tool.js";

/** Bytes of output kept: the first and last halves, the middle dropped. */
export const SHELL_MAX_OUTPUT_BYTES = 64 * 1024;
/** How long the output pipes may stay open after bash exits (a background job holding them). */
const DRAIN_AFTER_EXIT_MS = 500;

const description = `Run a bash command in the workspace root; returns its exit code and output (stdout and \
stderr, at most ${SHELL_MAX_OUTPUT_BYTES / 1024} KiB). Each command runs only with the person's approval: \
a denied one did not run, so ask instead of retrying. Run nothing if the person said not to. No stdin; \
killed after timeout_ms. Unless the sandbox is off: writes only to the workspace and /tmp, no network, \
no secrets.`;

const schema = z.strictObject({
  command: z.string().min(1),
  timeout_ms: z.number().int().min(1).max(600_000).default(120_000),
});

export const shellTool: Tool<z.infer<typeof schema>> = {
  name: "shell",
  description,
  parameters: parametersOf(schema),
  schema,
  async run(args, ctx) {
    const cwd = ctx.workspace.root;
    // A command that could not run sandboxed is refused before the person is asked about it.
    await ctx.sandbox.ensureAvailable();
    if (!(await ctx.approve({ kind: "shell", command: args.command, cwd, sandbox: ctx.sandbox.mode }))) {
      throw new ToolError(
        "denied",
        "The user denied this command: it did not run. Do not retry it; ask what they want instead.",
      );
    }
    ctx.signal.throwIfAborted();
    const spawnSpec = await ctx.sandbox.spawnFor(args.command, cwd);
    ctx.signal.throwIfAborted();
    const run = await runCommand(spawnSpec, cwd, args.timeout_ms, ctx.signal);
    ctx.signal.throwIfAborted();
    const display = {
      kind: "command" as const,
      command: args.command,
      exitCode: run.exitCode,
      output: run.output,
    };
    const body = run.output === "" ? "(no output)" : run.output;
    if (run.timedOut) {
      return {
        output: `Command timed out after ${args.timeout_ms} ms and was killed.\nOutput:\n${body}`,
        isError: true,
        errorCode: "timeout",
        display,
      };
    }
    const status = run.exitCode !== null ? `Exit code: ${run.exitCode}` : `Killed by signal ${run.signal}`;
    return { output: `${status}\nOutput:\n${body}`, isError: run.exitCode !== 0, display };
  },
};

interface CommandRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  timedOut: boolean;
}

/**
 * Runs the command (bash, or bwrap around it) as the leader of its own process group, so a timeout
 * or an abort kills the command's children too, not just bash. Under bwrap the command's own PID
 * namespace also ends every process in it once bwrap goes, including those that left the group.
 */
function runCommand(
  spawnSpec: SandboxedSpawn,
  cwd: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<CommandRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(spawnSpec.file, spawnSpec.args, {
      cwd,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: spawnSpec.env,
    });
    const capture = new OutputCapture(SHELL_MAX_OUTPUT_BYTES);
    child.stdout.on("data", (chunk: Buffer) => capture.add(chunk));
    child.stderr.on("data", (chunk: Buffer) => capture.add(chunk));

    let timedOut = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let drainTimer: NodeJS.Timeout | undefined;
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    };
    const onAbort = () => killGroup();
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    signal.addEventListener("abort", onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      clearTimeout(drainTimer);
      signal.removeEventListener("abort", onAbort);
    };

    child.on("error", (error) => {
      cleanup();
      reject(
        new ToolError("failed", `Could not start ${spawnSpec.file}: ${error.message}`, { cause: error }),
      );
    });
    child.on("exit", (code, exitSignal) => {
      exit = { code, signal: exitSignal };
      // A background job may keep the pipes open long after bash is gone; stop waiting for it.
      drainTimer = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
      }, DRAIN_AFTER_EXIT_MS);
    });
    child.on("close", (code, exitSignal) => {
      cleanup();
      const status = exit ?? { code, signal: exitSignal };
      resolve({ exitCode: status.code, signal: status.signal, output: capture.text(), timedOut });
    });
    if (signal.aborted) killGroup();
  });
}
