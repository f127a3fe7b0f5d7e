import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { findServerState } from "../../../src/config/server-state.js";
import { CodedError } from "../../../src/protocol/errors.js";

/** How to run Spark: a program and the arguments before `serve`. */
export interface SparkCommand {
  command: string;
  args: string[];
  /** Extra environment for the child (running VS Code's own binary as Node). */
  env?: Record<string, string>;
  /** For the log: where the command came from. */
  source: "setting" | "path" | "workspace";
}

export interface ResolveSparkOptions {
  /** The `spark.sparkPath` setting: an executable, a `.js` entry point, or a Spark checkout. */
  sparkPath?: string;
  /** The workspace folder: used when it is the Spark repository itself (and trusted). */
  cwd?: string;
  /**
   * `vscode.workspace.isTrusted`: only a trusted workspace that is a Spark checkout has its own
   * `bin/spark.js` run (any repository can call itself `spark-agent`). Default: false.
   */
  trustedWorkspace?: boolean;
  /** The environment searched for `PATH`. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
  /**
   * The Node that runs a `.js` entry point: `node` on PATH when there is one, else this binary with
   * `ELECTRON_RUN_AS_NODE=1` (VS Code's own). Default: `process.execPath`.
   */
  fallbackNode?: string;
}

export type SparkLaunchErrorCode =
  | "not_found"
  | "exited"
  | "timeout"
  | "aborted"
  | "unreachable"
  | "unauthorized";

/** Thrown when Spark cannot be started or reached; `message` says what to do. */
export class SparkLaunchError extends CodedError<SparkLaunchErrorCode> {
  constructor(code: SparkLaunchErrorCode, message: string) {
    super(code, message);
    this.name = "SparkLaunchError";
  }
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function findOnPath(name: string, env: NodeJS.ProcessEnv): string | null {
  const dirs = (env.PATH ?? env.Path ?? "").split(path.delimiter).filter(Boolean);
  const names = process.platform === "win32" ? [`${name}.cmd`, `${name}.exe`, name] : [name];
  for (const dir of dirs) {
    for (const candidate of names) {
      const file = path.join(dir, candidate);
      if (isExecutable(file)) return file;
    }
  }
  return null;
}

function nodeCommand(
  script: string,
  options: ResolveSparkOptions,
  source: SparkCommand["source"],
): SparkCommand {
  const env = options.env ?? process.env;
  const node = findOnPath("node", env);
  if (node) return { command: node, args: [script], source };
  return {
    command: options.fallbackNode ?? process.execPath,
    args: [script],
    env: { ELECTRON_RUN_AS_NODE: "1" },
    source,
  };
}

/** A checkout of Spark: its package.json names `spark-agent` and it has `bin/spark.js`. */
function sparkCheckout(dir: string): string | null {
  const entry = path.join(dir, "bin", "spark.js");
  if (!existsSync(entry)) return null;
  try {
    const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string };
    return pkg.name === "spark-agent" ? entry : null;
  } catch {
    return null;
  }
}

/**
 * How to start Spark, in order: the `sparkPath` setting (a `.js` file runs with Node, a folder is
 * a Spark checkout), `spark` on PATH, the workspace when it is the Spark repository and trusted.
 * Throws `not_found` saying what was tried.
 */
export function resolveSparkCommand(options: ResolveSparkOptions): SparkCommand {
  const env = options.env ?? process.env;
  const configured = options.sparkPath?.trim();
  if (configured) {
    const file = path.resolve(options.cwd ?? process.cwd(), configured);
    if (!existsSync(file)) {
      throw new SparkLaunchError("not_found", `spark.sparkPath names ${file}, which does not exist.`);
    }
    if (statSync(file).isDirectory()) {
      const entry = sparkCheckout(file);
      if (!entry) {
        throw new SparkLaunchError(
          "not_found",
          `spark.sparkPath names ${file}, which is not a Spark checkout.`,
        );
      }
      return nodeCommand(entry, options, "setting");
    }
    if (/\.[cm]?js$/.test(file)) return nodeCommand(file, options, "setting");
    return { command: file, args: [], source: "setting" };
  }
  const onPath = findOnPath("spark", env);
  if (onPath) return { command: onPath, args: [], source: "path" };
  const entry = options.cwd ? sparkCheckout(options.cwd) : null;
  if (entry && options.trustedWorkspace) return nodeCommand(entry, options, "workspace");
  if (entry) {
    throw new SparkLaunchError(
      "not_found",
      "No `spark` on PATH, and this workspace's own bin/spark.js runs only once you trust the " +
        "workspace (Workspaces: Manage Workspace Trust), or set spark.sparkPath.",
    );
  }
  throw new SparkLaunchError(
    "not_found",
    "Spark is not installed: no `spark` on PATH. Install it (npm install -g spark-agent), or set " +
      "spark.sparkPath to the spark executable or a Spark checkout, or spark.serverUrl to a running server.",
  );
}

export interface LaunchOptions {
  command: SparkCommand;
  /** The workspace: the agent works in the server's current directory. */
  cwd: string;
  /** 0 picks a free port. Default: 0. */
  port?: number;
  /**
   * Required of clients; passed in the child's SPARK_API_KEY (not on its command line, which other
   * users can read). Default: none, and the server makes a key of its own.
   */
  apiKey?: string;
  /** More arguments for `spark serve` (`--model`, `--engine upstream`, ...). Default: none. */
  extraArgs?: string[];
  /** The environment. Default: `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Each line the server prints (its log, download progress). */
  onOutput?: (line: string) => void;
  /**
   * How long to wait for the server to listen. The first start may download the default model.
   * Default: 15 minutes.
   */
  readyTimeoutMs?: number;
  signal?: AbortSignal;
}

/** A `spark serve` this extension started. */
export interface SparkProcess {
  /** `http://HOST:PORT`, without `/v1`. */
  baseUrl: string;
  pid: number | undefined;
  /** Resolves with the exit code (null: killed by a signal) once it exits. */
  exited: Promise<number | null>;
  /** Stops it (SIGTERM, then SIGKILL after 3 s); resolves once it exited. Idempotent. */
  dispose(): Promise<void>;
}

/** The address `spark serve` prints once it listens: `  HTTP       http://127.0.0.1:8080/v1`. */
const READY = /^\s*HTTP\s+(https?:\/\/\S+?)\/v1\s*$/;

/** Starts `spark serve` and resolves once it listens, with its address. */
export function launchSpark(options: LaunchOptions): Promise<SparkProcess> {
  if (options.signal?.aborted) {
    return Promise.reject(new SparkLaunchError("aborted", "Starting spark serve was cancelled."));
  }
  const args = [
    ...options.command.args,
    "serve",
    "--port",
    String(options.port ?? 0),
    ...(options.extraArgs ?? []),
  ];
  const child: ChildProcess = spawn(options.command.command, args, {
    cwd: options.cwd,
    env: {
      ...(options.env ?? process.env),
      ...options.command.env,
      ...(options.apiKey ? { SPARK_API_KEY: options.apiKey } : {}),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // A server outliving the editor would hold its port and the workspace: stop it with this process.
  const killOnExit = () => child.kill("SIGTERM");
  process.once("exit", killOnExit);
  const exited = new Promise<number | null>((resolve) => {
    child.once("exit", (code) => resolve(code));
    child.once("error", () => resolve(null));
  }).finally(() => process.removeListener("exit", killOnExit));
  let disposing: Promise<void> | undefined;
  const dispose = () => {
    disposing ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    })();
    return disposing;
  };
  const tail: string[] = [];
  return new Promise<SparkProcess>((resolve, reject) => {
    let settled = false;
    const fail = (error: SparkLaunchError) => {
      if (settled) return;
      settled = true;
      cleanup();
      void dispose();
      reject(error);
    };
    const onLine = (line: string) => {
      options.onOutput?.(line);
      tail.push(line);
      if (tail.length > 20) tail.shift();
      const ready = READY.exec(line);
      if (ready && !settled) {
        settled = true;
        cleanup();
        resolve({ baseUrl: ready[1]!, pid: child.pid, exited, dispose });
      }
    };
    readLines(child.stdout!, onLine);
    readLines(child.stderr!, onLine);
    const timer = setTimeout(
      () => fail(new SparkLaunchError("timeout", "spark serve did not start listening in time.")),
      options.readyTimeoutMs ?? 15 * 60_000,
    );
    const onAbort = () => fail(new SparkLaunchError("aborted", "Starting spark serve was cancelled."));
    options.signal?.addEventListener("abort", onAbort, { once: true });
    const cleanup = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    };
    child.once("error", (error) =>
      fail(new SparkLaunchError("not_found", `Could not run ${options.command.command}: ${error.message}`)),
    );
    void exited.then((code) => {
      const last = tail.filter((line) => line.trim()).slice(-5);
      fail(
        new SparkLaunchError(
          "exited",
          `spark serve exited (code ${code ?? "signal"}) before listening${last.length ? `:\n${last.join("\n")}` : "."}`,
        ),
      );
    });
  });
}

function readLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buffer = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk: string) => {
    buffer += chunk;
    // Progress bars redraw with \r: each redraw is a line of its own.
    const parts = buffer.split(/\r?\n|\r/);
    buffer = parts.pop() ?? "";
    for (const part of parts) onLine(part);
  });
  stream.on("end", () => {
    if (buffer) onLine(buffer);
    buffer = "";
  });
}

export type ProbeResult = { ok: true; models: string[] } | { ok: false; error: SparkLaunchError };

/**
 * Checks a server at `baseUrl` (`http://HOST:PORT`): alive (`/healthz`) and accepting the key
 * (`/v1/models`). Never throws.
 */
export async function probeServer(
  baseUrl: string,
  options: { apiKey?: string; timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<ProbeResult> {
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 3000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  try {
    const health = await fetch(`${baseUrl}/healthz`, { signal });
    if (!health.ok) {
      return {
        ok: false,
        error: new SparkLaunchError("unreachable", `${baseUrl} answered ${health.status}.`),
      };
    }
    const models = await fetch(`${baseUrl}/v1/models`, {
      signal,
      headers: options.apiKey ? { Authorization: `Bearer ${options.apiKey}` } : {},
    });
    if (models.status === 401) {
      return {
        ok: false,
        error: new SparkLaunchError(
          "unauthorized",
          options.apiKey
            ? `${baseUrl} refused the API key (spark.apiKey).`
            : `${baseUrl} requires an API key: set spark.apiKey.`,
        ),
      };
    }
    if (!models.ok) {
      return {
        ok: false,
        error: new SparkLaunchError("unreachable", `${baseUrl}/v1/models answered ${models.status}.`),
      };
    }
    const body = (await models.json()) as { data?: { id: string }[] };
    return { ok: true, models: (body.data ?? []).map((model) => model.id) };
  } catch (error) {
    const reason =
      error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : "";
    return {
      ok: false,
      error: new SparkLaunchError(
        "unreachable",
        `No Spark server at ${baseUrl}${reason ? ` (${reason})` : ""}.`,
      ),
    };
  }
}

/** `http://HOST:PORT/...` -> `ws://HOST:PORT/v1/agent`. */
export function agentSocketUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.pathname = "/v1/agent";
  url.search = "";
  url.hash = "";
  return url.toString();
}

/** The server address of a setting: trailing `/v1` and slashes dropped. */
export function normalizeServerUrl(value: string): string {
  return value.trim().replace(/\/+$/, "").replace(/\/v1$/, "");
}

/** Whether `baseUrl` names this machine, where Spark may start a server on its port. */
export function isLoopback(baseUrl: string): boolean {
  const host = new URL(baseUrl).hostname;
  return host === "localhost" || host === "[::1]" || host === "::1" || /^127\./.test(host);
}

/**
 * The key of a `spark serve` this user runs at `baseUrl` on this machine, read from the state file
 * it keeps for local clients (0600, see src/config/server-state.ts); null when none is recorded,
 * the server is elsewhere, or it runs with `--no-auth`.
 */
export async function localServerKey(
  baseUrl: string,
  options: { env?: NodeJS.ProcessEnv } = {},
): Promise<string | null> {
  if (!isLoopback(baseUrl)) return null;
  const url = new URL(baseUrl);
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  return (await findServerState(port, options))?.key ?? null;
}
