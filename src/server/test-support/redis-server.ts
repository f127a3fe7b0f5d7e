import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

/** Debian's redis-server (`.ci/run` installs it); null when this machine has none. */
export function redisServerBinary(): string | null {
  for (const candidate of ["/usr/bin/redis-server", "/usr/local/bin/redis-server"])
    if (existsSync(candidate)) return candidate;
  return null;
}

/** Why tests that start (and kill) a Redis of their own skip here, or null when they can run. */
export const NO_REDIS_BINARY_REASON = redisServerBinary()
  ? null
  : "no redis-server binary (apt-get install redis-server)";

/** Why tests that need some Redis skip here, or null when they can run. */
export const NO_REDIS_REASON =
  process.env.SPARK_TEST_REDIS_URL || redisServerBinary()
    ? null
    : "no redis-server binary (apt-get install redis-server) and no SPARK_TEST_REDIS_URL";

export interface TestRedis {
  /** `unix:///…/redis.sock`. */
  url: string;
  child: ChildProcess;
  /** Kills it at once (SIGKILL) and waits for it to be gone. */
  kill(): Promise<void>;
  /** Stops it and removes its folder; idempotent. */
  stop(): Promise<void>;
}

export interface StartRedisOptions {
  /** requirepass. Default: none. */
  password?: string;
  /** The folder (and socket) to use, e.g. to restart on the same socket. Default: a new one. */
  dir?: string;
}

/**
 * Starts a redis-server of its own on a unix socket in a temporary folder (no TCP port, no
 * persistence) and resolves once it accepts connections.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<TestRedis> {
  const binary = redisServerBinary();
  if (!binary) throw new Error("No redis-server binary.");
  const dir = options.dir ?? (await mkdtemp(path.join(os.tmpdir(), "spark-redis-")));
  const socket = path.join(dir, "redis.sock");
  const args = [
    "--port",
    "0",
    "--unixsocket",
    socket,
    "--unixsocketperm",
    "700",
    "--save",
    "",
    "--appendonly",
    "no",
  ];
  args.push("--dir", dir);
  if (options.password) args.push("--requirepass", options.password);
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  await new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk;
      if (/ready to accept connections/i.test(output)) resolve();
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("exit", (code) => reject(new Error(`redis-server exited (${code}):\n${output}`)));
    child.once("error", reject);
  });
  const gone = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  let stopped = false;
  return {
    url: `unix://${socket}`,
    child,
    async kill() {
      child.kill("SIGKILL");
      await gone;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      child.kill("SIGTERM");
      await gone;
      if (!options.dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The Redis tests share: `SPARK_TEST_REDIS_URL` (`.ci/run` starts one), else one started here.
 * Each test uses its own key prefix.
 */
export async function sharedTestRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const url = process.env.SPARK_TEST_REDIS_URL;
  if (url) return { url, stop: async () => {} };
  return startRedis();
}
