import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { sparkBin as bin } from "../../../cli/test-support/spark-binary.js";

/** A real `spark serve` child process (the built CLI: `npm test` builds first). */
export interface SparkServeProcess extends AsyncDisposable {
  child: ChildProcess;
  /** `http://127.0.0.1:PORT/v1`. */
  url: string;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  stderr(): string;
  /** Resolves once stderr matches `pattern` (rejects if the process exits first). */
  stderrMatches(pattern: RegExp): Promise<void>;
}

/**
 * Starts `spark serve <args> --port 0 --no-auth` (its state file in a temporary SPARK_HOME), with
 * `env` over this process's environment, and resolves once it prints its address.
 */
export async function startSparkServe(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<SparkServeProcess> {
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-serve-home-"));
  const child = spawn(process.execPath, [bin, "serve", ...args, "--port", "0", "--no-auth"], {
    env: { ...process.env, SPARK_HOME: home, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  let watchers: { pattern: RegExp; resolve: () => void }[] = [];
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (text: string) => {
      stderr += text;
      const met = watchers.filter((w) => w.pattern.test(stderr));
      watchers = watchers.filter((w) => !met.includes(w));
      for (const watcher of met) watcher.resolve();
      const match = /HTTP\s+(http:\/\/\S+\/v1)/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    void exited.then(() => reject(new Error(`spark serve exited early:\n${stderr}`)));
  });
  return {
    child,
    url,
    exited,
    stderr: () => stderr,
    stderrMatches: (pattern) =>
      pattern.test(stderr)
        ? Promise.resolve()
        : new Promise<void>((resolve, reject) => {
            watchers.push({ pattern, resolve });
            void exited.then(() => reject(new Error(`spark serve exited before printing ${pattern}`)));
          }),
    async [Symbol.asyncDispose]() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
