import type { ChildProcess } from "node:child_process";

const STOP_TIMEOUT_MS = 5_000;

/** Resolves once `child` has exited (at once if it already has). */
export function exitOf(child: ChildProcess): Promise<void> {
  return child.exitCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Stops a server child: SIGTERM, then SIGKILL if it lingers past 5 s; idempotent. */
export async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}
