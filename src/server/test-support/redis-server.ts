import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createClient } from "redis";

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

/** Why tests of `rediss://` skip here (they need openssl to make certificates), or null. */
export const NO_TLS_REDIS_REASON =
  NO_REDIS_BINARY_REASON ??
  (existsSync("/usr/bin/openssl") ? null : "no openssl binary to make test certificates");

export interface TestRedis {
  /** `unix:///…/redis.sock`. */
  url: string;
  /** With `tls`: `rediss://localhost:PORT`, and the CA (PEM) that signed its certificate. */
  tls?: { url: string; ca: string };
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
  /**
   * Also listen with TLS on a loopback port, with a certificate for `localhost` signed by a CA made
   * for it (in the folder). Default: false.
   */
  tls?: boolean;
  /**
   * Run as a Redis Cluster of one node holding every slot (so a command whose keys hash to
   * different slots is refused with CROSSSLOT, as on a real cluster). Default: false.
   */
  cluster?: boolean;
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
  let tls: TestRedis["tls"];
  if (options.tls) {
    const files = await testCertificates(dir);
    const port = await freeLoopbackPort();
    args.push("--bind", "127.0.0.1", "--tls-port", String(port), "--tls-auth-clients", "no");
    args.push("--tls-cert-file", files.cert, "--tls-key-file", files.key, "--tls-ca-cert-file", files.ca);
    tls = { url: `rediss://localhost:${port}`, ca: await readFile(files.ca, "utf8") };
  }
  if (options.cluster) {
    // The cluster bus needs a TCP port of its own (by default the client port + 10,000).
    args.push("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--bind", "127.0.0.1");
    args.push("--cluster-port", String(await freeLoopbackPort()));
  }
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
  if (options.cluster) await takeEverySlot(socket);
  const gone = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
  let stopped = false;
  return {
    url: `unix://${socket}`,
    ...(tls ? { tls } : {}),
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

const run = promisify(execFile);

/** A CA and a certificate for `localhost` / 127.0.0.1 signed by it (EC keys: quick to make). */
async function testCertificates(dir: string): Promise<{ ca: string; cert: string; key: string }> {
  const file = (name: string) => path.join(dir, name);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await run(
    "openssl",
    ["req", "-x509", ...ec, "-keyout", file("ca.key"), "-out", file("ca.crt")].concat([
      "-days",
      "2",
      "-subj",
      "/CN=spark-test-ca",
    ]),
  );
  await run(
    "openssl",
    ["req", ...ec, "-keyout", file("server.key"), "-out", file("server.csr")].concat([
      "-subj",
      "/CN=localhost",
    ]),
  );
  await writeFile(file("server.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  await run(
    "openssl",
    ["x509", "-req", "-in", file("server.csr"), "-CA", file("ca.crt")]
      .concat(["-CAkey", file("ca.key"), "-CAcreateserial", "-out", file("server.crt"), "-days", "2"])
      .concat(["-extfile", file("server.ext")]),
  );
  return { ca: file("ca.crt"), cert: file("server.crt"), key: file("server.key") };
}

/** A loopback port nothing listens on just now. */
async function freeLoopbackPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Gives the one node every slot and waits until it reports the cluster up (Redis announces that
 * only in CLUSTER INFO, so this asks again every 50 ms, for at most 20 s).
 */
async function takeEverySlot(socket: string): Promise<void> {
  const client = createClient({ socket: { path: socket, tls: false }, maintNotifications: "disabled" });
  client.on("error", () => {});
  await client.connect();
  try {
    await client.sendCommand(["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    const deadline = Date.now() + 20_000;
    while (!String(await client.sendCommand(["CLUSTER", "INFO"])).includes("cluster_state:ok")) {
      if (Date.now() > deadline) throw new Error("The one-node Redis Cluster did not come up.");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } finally {
    client.destroy();
  }
}
