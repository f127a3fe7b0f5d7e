import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { exitOf, stopChild } from "./child-lifetime.js";
import { scriptedSpark, sparkBin } from "./repo-paths.js";

const START_TIMEOUT_MS = 30_000;

/**
 * `spark serve` in a child process, so its CPU time can be read on its own (client work in the
 * bench process does not count). Runs the built CLI (`bin/spark.js`, which needs `dist/`).
 */
export class ServerProcess implements AsyncDisposable {
  private readonly clockTicks = clockTicksPerSecond();
  private exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    /** `http://127.0.0.1:PORT/v1`. */
    readonly baseUrl: string,
  ) {
    this.exited = exitOf(child);
  }

  /**
   * `start` on the scripted engine, emitting `tokensPerSecond` (0: flat out): the test entry point
   * of a checkout (see scriptedSpark).
   */
  static async scripted(tokensPerSecond: number, args: string[] = []): Promise<ServerProcess> {
    const spark = await scriptedSpark();
    return ServerProcess.start(args, spark.env({ tokensPerSecond }), spark.bin);
  }

  /**
   * Starts `spark serve <args> --port 0 --no-auth` (loopback), `env` over this process's, and waits
   * for it to print its URL. `bin`: the CLI to run. Default: bin/spark.js.
   */
  static async start(args: string[], env: NodeJS.ProcessEnv = {}, bin = sparkBin()): Promise<ServerProcess> {
    const child = spawn(process.execPath, [bin, "serve", ...args, "--port", "0", "--no-auth"], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      const baseUrl = await new Promise<string>((resolve, reject) => {
        let stderr = "";
        const timer = setTimeout(() => fail(new Error("did not start in time")), START_TIMEOUT_MS);
        const fail = (error: Error) => {
          clearTimeout(timer);
          reject(new Error(`bench: spark serve: ${error.message}\n${stderr}`));
        };
        child.once("error", fail);
        child.once("exit", (code) => fail(new Error(`exited with ${code}`)));
        child.stderr!.setEncoding("utf8");
        child.stderr!.on("data", (text: string) => {
          stderr += text;
          const url = /HTTP\s+(http:\/\/\S+\/v1)/.exec(stderr)?.[1];
          if (url) {
            clearTimeout(timer);
            child.removeAllListeners("exit");
            child.stderr!.removeAllListeners("data");
            resolve(url);
          }
        });
      });
      child.stderr!.resume();
      return new ServerProcess(child, baseUrl);
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    }
  }

  get pid(): number {
    return this.child.pid!;
  }

  /**
   * CPU time (user + system, all threads) the server has used so far, in ms, from
   * `/proc/<pid>/stat`; undefined where there is no /proc.
   */
  cpuMs(): number | undefined {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${this.child.pid}/stat`, "utf8");
    } catch {
      return undefined;
    }
    // Fields after the command name, which is in parentheses and may hold spaces: utime and stime
    // are fields 14 and 15 of the whole line, so 11 and 12 here (the state is field 3).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / this.clockTicks;
  }

  /** Stops the server (SIGTERM, then SIGKILL if it lingers); idempotent. */
  async dispose(): Promise<void> {
    await stopChild(this.child, this.exited);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.dispose();
  }
}

function clockTicksPerSecond(): number {
  try {
    const ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
    return ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}
