import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";

/** The command that installs the router (scripts/fetch-router.mjs; `.ci/run` runs it). */
export const FETCH_ROUTER = "npm run fetch:router";
const VERSION = "0.1.17";

/** Where scripts/fetch-router.mjs installed vLLM's router, or undefined when it has not. */
export function vllmRouterDir(): string | undefined {
  const dir =
    process.env.SPARK_ROUTER_DIR ||
    path.join(os.homedir(), ".cache", "spark", "routers", `vllm-router-${VERSION}`);
  return existsSync(path.join(dir, "vllm_router", "launch_router.py")) ? dir : undefined;
}

export interface RunningRouter extends AsyncDisposable {
  /** The router's API root (`http://127.0.0.1:PORT/v1`). */
  url: string;
}

/**
 * vLLM's router (`vllm-router`, Rust) on a free loopback port in front of `workers` (their roots,
 * without `/v1`), with `policy` (`consistent_hash` routes by the `x-session-id` header). Ready once
 * its `/health` answers 200.
 */
export async function startVllmRouter(
  dir: string,
  workers: string[],
  policy = "consistent_hash",
): Promise<RunningRouter> {
  const port = await freePort();
  // Its Prometheus exporter listens on a fixed port by default: another router would collide.
  const metricsPort = await freePort();
  const child: ChildProcess = spawn(
    process.env.PYTHON || "python3",
    [
      ...["-m", "vllm_router.launch_router", "--host", "127.0.0.1", "--port", String(port)],
      ...["--prometheus-host", "127.0.0.1", "--prometheus-port", String(metricsPort)],
      ...["--policy", policy, "--worker-urls", ...workers],
    ],
    { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, PYTHONPATH: dir } },
  );
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (text: string) => {
    stderr = (stderr + text).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = performance.now() + 60_000;
  while (!gone && performance.now() < deadline) {
    const status = await fetch(`${url}/health`).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) {
      return {
        url: `${url}/v1`,
        async [Symbol.asyncDispose]() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          await exited;
        },
      };
    }
    // The router prints no machine-readable "ready" line: poll its health endpoint.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill("SIGKILL");
  throw new Error(`vllm-router ${gone ? "exited" : "did not start in time"}\n${stderr}`);
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
