import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { exitOf, stopChild } from "./child-lifetime.js";

const START_TIMEOUT_MS = 120_000;

export interface PeerServerOptions {
  /** The `llama-server` binary (`scripts/build-llama-server.sh` builds one from the bundled llama.cpp). */
  binary: string;
  modelPath: string;
  contextSize: number;
  threads: number;
  /** Slots (`--parallel`): requests decoded together, `contextSize` shared among them; -1: llama-server's own choice. Default: 1. */
  parallel?: number;
  /** More flags, e.g. `--jinja` and speculation settings. Default: none. */
  extraArgs?: readonly string[];
}

/**
 * Plain llama.cpp `llama-server` in a child process: the baseline of `spark bench --scenario peer`
 * and `--scenario agent`.
 * One slot unless told more, the given context and thread count, on a free loopback port; ready
 * once `/health` answers 200.
 */
export class PeerServer implements AsyncDisposable {
  private readonly exited: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    /** `http://127.0.0.1:PORT/v1`. */
    readonly baseUrl: string,
  ) {
    this.exited = exitOf(child);
  }

  static async start(options: PeerServerOptions): Promise<PeerServer> {
    const port = await freePort();
    const threads = String(options.threads);
    const child = spawn(
      options.binary,
      [
        ...["--model", options.modelPath, "--ctx-size", String(options.contextSize)],
        ...["--threads", threads, "--threads-batch", threads, "--parallel", String(options.parallel ?? 1)],
        ...["--host", "127.0.0.1", "--port", String(port)],
        ...(options.extraArgs ?? []),
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (text: string) => {
      stderr = (stderr + text).slice(-4000);
    });
    const server = new PeerServer(child, `http://127.0.0.1:${port}/v1`);
    try {
      await server.untilHealthy(() => stderr);
      return server;
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    }
  }

  get pid(): number {
    return this.child.pid!;
  }

  private async untilHealthy(stderr: () => string): Promise<void> {
    const deadline = performance.now() + START_TIMEOUT_MS;
    const health = `${this.baseUrl.replace(/\/v1$/, "")}/health`;
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    while (!exited && performance.now() < deadline) {
      const status = await fetch(health).then(
        (response) => response.status,
        () => 0,
      );
      if (status === 200) return;
      // Polling the health endpoint: the server prints no machine-readable "ready" line.
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(`bench: llama-server ${exited ? "exited" : "did not start in time"}\n${stderr()}`);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await stopChild(this.child, this.exited);
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}
