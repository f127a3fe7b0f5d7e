import { execFileSync, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The built `spark` binary (run `npm run build` first). */
export const sparkBin = fileURLToPath(new URL("../../../bin/spark.js", import.meta.url));

export interface SparkRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `spark <args>` in `cwd` to its end, with `env` over this process's environment. */
export function runSpark(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<SparkRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [sparkBin, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("exit", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** A tmux session a test drives like a person at a terminal. */
export interface TmuxSession {
  name: string;
  tmux(...args: string[]): string;
  /** The pane's text, with 200 lines of scrollback. */
  screen(): string;
  /** Polls the pane until `pattern` shows (a real terminal has no event to wait on). */
  waitForScreen(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Ends the session if it still runs. */
  kill(): void;
}

export function tmuxSession(name: string): TmuxSession {
  const tmux = (...args: string[]) => execFileSync("tmux", args, { encoding: "utf8" });
  const screen = () => tmux("capture-pane", "-p", "-t", name, "-S", "-200");
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
