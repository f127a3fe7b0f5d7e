import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtemp, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensureTestBin } from "../../../scripts/build-test-bin.mjs";
import { listServerStates, type ServerState } from "../../config/server-state.js";
import type { ScriptFileEntry } from "./scripted-script.js";
import { testEngineEnv } from "./test-engine.js";

/** The shipped `spark` binary, bin/spark.js (run `npm run build` first): no test engine in it. */
export const shippedSparkBin = fileURLToPath(new URL("../../../bin/spark.js", import.meta.url));

/**
 * The `spark` binary tests start: the test entry point (spark-test-bin.ts), which is bin/spark.js
 * plus the scripted engine SPARK_TEST_ENGINE asks for (testEngineEnv). Built here when missing or
 * older than its sources; it runs dist/ (run `npm run build` first).
 */
export const sparkBin = await ensureTestBin();

export interface ProcessRun {
  code: number | null;
  /** The signal that ended it (SIGKILL when it ran past `timeoutMs`). */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command <args>` in `cwd` with the environment `env` to its end, and collects its output;
 * killed after `timeoutMs` when given, rather than outliving the test.
 */
export function runProcess(
  command: string,
  args: string[],
  { cwd, env, timeoutMs }: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      ...(timeoutMs === undefined ? {} : { timeout: timeoutMs, killSignal: "SIGKILL" as const }),
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export interface SparkRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `spark <args>` in `cwd` to its end, with `env` over this process's environment. */
export async function runSpark(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<SparkRun> {
  const { code, stdout, stderr } = await runProcess(process.execPath, [sparkBin, ...args], {
    cwd,
    env: { ...process.env, ...env },
  });
  return { code: code ?? -1, stdout, stderr };
}

/** A tmux session a test drives like a person at a terminal. */
export interface TmuxSession {
  name: string;
  tmux(...args: string[]): string;
  /** The pane's text, with 400 lines of scrollback. */
  screen(): string;
  /** Polls the pane until `pattern` shows (a real terminal has no event to wait on). */
  waitForScreen(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Ends the session if it still runs. */
  kill(): void;
}

export function tmuxSession(name: string): TmuxSession {
  const tmux = (...args: string[]) => execFileSync("tmux", args, { encoding: "utf8" });
  const screen = () => tmux("capture-pane", "-p", "-t", name, "-S", "-400");
  return {
    name,
    tmux,
    screen,
    async waitForScreen(pattern, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = screen();
        if (pattern.test(text)) return text;
        if (Date.now() > deadline) throw new Error(`Timed out waiting for ${pattern}. Screen:\n${text}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    kill() {
      try {
        tmux("kill-session", "-t", name);
      } catch {
        // Already gone.
      }
    },
  };
}

/** A `spark serve` in a fresh git workspace, with its state file and sessions in temporary folders. */
export interface WorkspaceServe {
  child: ChildProcess;
  /** The workspace (a real path). */
  repo: string;
  /** The environment `spark` needs to find this server: XDG_STATE_HOME and SPARK_SESSIONS_DIR set. */
  env: NodeJS.ProcessEnv;
  /** The server's state file: its URL and key. */
  state: ServerState;
  /** Stops the server (SIGINT, as Ctrl+C) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts `spark serve <args> --port 0` in a new workspace and resolves once it is serving. */
export async function startWorkspaceServe(
  args: string[],
  extraEnv: NodeJS.ProcessEnv = {},
): Promise<WorkspaceServe> {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-workspace-")));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const { SPARK_HOME: _, SPARK_API_KEY: __, ...inherited } = process.env;
  const env = {
    ...inherited,
    XDG_STATE_HOME: await mkdtemp(path.join(os.tmpdir(), "spark-workspace-state-")),
    SPARK_SESSIONS_DIR: await mkdtemp(path.join(os.tmpdir(), "spark-workspace-sessions-")),
    ...extraEnv,
  };
  const child = spawn(process.execPath, [sparkBin, "serve", ...args, "--port", "0"], {
    cwd: repo,
    env,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (chunk) => {
      stderr += chunk;
      if (stderr.includes("Press Ctrl+C")) resolve();
    });
    child.once("exit", () => reject(new Error(`spark serve exited:\n${stderr}`)));
  });
  const [state] = (await listServerStates({ env })) as [ServerState];
  return {
    child,
    repo,
    env,
    state,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGINT");
      await exited;
    },
  };
}

/** `spark serve` in a fresh workspace on the scripted engine, playing `script` at `tokensPerSecond`. */
export async function startScriptedServe(
  script: ScriptFileEntry[],
  tokensPerSecond: number,
): Promise<WorkspaceServe> {
  const scriptFile = path.join(await mkdtemp(path.join(os.tmpdir(), "spark-script-")), "script.json");
  await writeFile(scriptFile, JSON.stringify(script));
  return startWorkspaceServe([], testEngineEnv({ script: scriptFile, tokensPerSecond }));
}

/** Starts the real `spark` in `term`'s tmux session, in the server's workspace (so it attaches). */
export function startAttachedSpark(term: TmuxSession, serve: WorkspaceServe): void {
  const command = [
    `cd ${serve.repo} &&`,
    `XDG_STATE_HOME=${serve.env.XDG_STATE_HOME}`,
    `SPARK_SESSIONS_DIR=${serve.env.SPARK_SESSIONS_DIR}`,
    `"${process.execPath}" "${sparkBin}"`,
  ].join(" ");
  term.tmux(
    "new-session",
    "-d",
    "-s",
    term.name,
    "-x",
    "120",
    "-y",
    "40",
    "-e",
    "CI=false",
    "-e",
    "SPARK_HOME=",
    command,
  );
}
