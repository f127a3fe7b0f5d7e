import { type ProcessRun, runProcess, sparkBin } from "../../cli/test-support/spark-binary.js";
import type { ThreadEvent } from "../../protocol/agent.js";

export interface SparkExec extends ProcessRun {
  /** stdout's JSON lines (`--json`); empty without it. */
  events: ThreadEvent[];
}

/**
 * Runs `spark <args>` in `cwd` to its end, with `env` over this process's environment. A real model
 * may write without end, so the process is killed after `timeoutMs` rather than outliving the test.
 */
export async function sparkExec(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<SparkExec> {
  const run = await runProcess(process.execPath, [sparkBin, ...args], {
    cwd,
    env: { ...process.env, ...env },
    timeoutMs,
  });
  const events = args.includes("--json")
    ? run.stdout
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => JSON.parse(line) as ThreadEvent)
    : [];
  return { ...run, events };
}
