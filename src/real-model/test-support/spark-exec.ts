import { spawn } from "node:child_process";
import { sparkBin } from "../../cli/test-support/spark-binary.js";
import type { ThreadEvent } from "../../protocol/agent.js";

export interface SparkExec {
  code: number | null;
  /** The signal that ended it: SIGKILL when it ran past its time. */
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** stdout's JSON lines (`--json`); empty without it. */
  events: ThreadEvent[];
}

/**
 * Runs `spark <args>` in `cwd` to its end, with `env` over this process's environment. A real model
 * may write without end, so the process is killed after `timeoutMs` rather than outliving the test.
 */
export function sparkExec(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<SparkExec> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [sparkBin, ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: timeoutMs,
      killSignal: "SIGKILL",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      const events = args.includes("--json")
        ? stdout
            .split("\n")
            .filter((line) => line.trim() !== "")
            .map((line) => JSON.parse(line) as ThreadEvent)
        : [];
      resolve({ code, signal, stdout, stderr, events });
    });
  });
}
