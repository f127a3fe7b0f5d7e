import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { runSpark, sparkBin } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const KEY = "sk-never-on-argv-0123456789";
const UPSTREAM_KEY = "up-never-on-argv-9876543210";

interface Served {
  child: ChildProcess;
  url: string;
  stderr: () => string;
}

const running: ChildProcess[] = [];
afterEach(async () => {
  for (const child of running.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
});

/**
 * `spark serve <args> --port 0` as a child process, once it printed its address; on the scripted
 * engine unless `args` name another.
 */
async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const home = await mkdtemp(path.join(os.tmpdir(), "spark-keys-home-"));
  const child = spawn(process.execPath, [sparkBin, "serve", ...args, "--port", "0"], {
    env: {
      ...process.env,
      SPARK_API_KEY: "",
      SPARK_UPSTREAM_API_KEY: "",
      SPARK_HOME: home,
      SPARK_CONFIG: path.join(home, "none.toml"),
      ...(args.includes("--engine") ? {} : testEngineEnv()),
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  running.push(child);
  let stderr = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (text: string) => {
      stderr += text;
      const match = /HTTP\s+(http:\/\/\S+)\/v1/.exec(stderr);
      if (match) resolve(match[1]!);
    });
    child.once("exit", () => reject(new Error(`spark serve exited early:\n${stderr}`)));
  });
  return { child, url, stderr: () => stderr };
}

/** What any local user reads of the process's command line (`ps` reads the same file). */
function commandLine(child: ChildProcess): string {
  return readFileSync(`/proc/${child.pid}/cmdline`, "utf8").replaceAll("\0", " ");
}

async function status(url: string, key?: string): Promise<number> {
  const response = await fetch(
    `${url}/v1/models`,
    key ? { headers: { authorization: `Bearer ${key}` } } : {},
  );
  await response.body?.cancel();
  return response.status;
}

async function keyFile(key: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-key-file-"));
  const file = path.join(dir, "key");
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return file;
}

/** A stand-in upstream that records the headers of its health checks. */
async function upstream(): Promise<{ url: string; seen: IncomingHttpHeaders[]; close: () => void }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"object":"list","data":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, seen, close: () => server.close() };
}

describe("API keys never on the command line (the real binary)", () => {
  test("from SPARK_API_KEY or --api-key-file: required, and absent from /proc/PID/cmdline", async () => {
    const fromEnv = await serve([], { SPARK_API_KEY: KEY });
    expect(commandLine(fromEnv.child)).toContain("serve");
    expect(commandLine(fromEnv.child)).not.toContain(KEY);
    expect(await status(fromEnv.url)).toBe(401);
    expect(await status(fromEnv.url, KEY)).toBe(200);
    expect(fromEnv.stderr()).not.toContain("warning");

    const file = await keyFile(KEY);
    const fromFile = await serve(["--api-key-file", file]);
    expect(commandLine(fromFile.child)).toContain(file);
    expect(commandLine(fromFile.child)).not.toContain(KEY);
    expect(await status(fromFile.url)).toBe(401);
    expect(await status(fromFile.url, KEY)).toBe(200);
    expect(fromFile.stderr()).not.toContain("warning");
  });

  test("--api-key still works, with a warning that ps shows it", async () => {
    const flagged = await serve(["--api-key", KEY]);
    expect(await status(flagged.url, KEY)).toBe(200);
    expect(flagged.stderr()).toContain(
      "spark: warning: --api-key shows the key to every local user (ps); pass it in $SPARK_API_KEY or --api-key-file instead.",
    );
  });

  test("the upstream's key from --upstream-api-key-file reaches the upstream, not argv; the flag warns", async () => {
    const fake = await upstream();
    try {
      const file = await keyFile(UPSTREAM_KEY);
      const args = ["--engine", "upstream", "--upstream", fake.url, "--upstream-model", "m", "--no-auth"];
      const fromFile = await serve([...args, "--upstream-api-key-file", file]);
      expect(commandLine(fromFile.child)).not.toContain(UPSTREAM_KEY);
      expect(fake.seen.map((headers) => headers.authorization)).toContain(`Bearer ${UPSTREAM_KEY}`);
      expect(fromFile.stderr()).not.toContain("warning");

      const flagged = await serve([...args, "--upstream-api-key", UPSTREAM_KEY]);
      expect(flagged.stderr()).toContain("spark: warning: --upstream-api-key shows the key");
      expect(flagged.stderr()).toContain("$SPARK_UPSTREAM_API_KEY or --upstream-api-key-file");
    } finally {
      fake.close();
    }
  });

  test("spark exec --server takes its key from --api-key-file; --api-key warns", async () => {
    const served = await serve([], { SPARK_API_KEY: KEY });
    const home = await mkdtemp(path.join(os.tmpdir(), "spark-keys-exec-"));
    const env = {
      SPARK_HOME: home,
      SPARK_CONFIG: path.join(home, "none.toml"),
      SPARK_API_KEY: "",
      OPENAI_API_KEY: "",
    };
    const exec = (...flags: string[]) =>
      runSpark(["exec", "--server", `${served.url}/v1`, ...flags, "hello there"], home, env);
    const fromFile = await exec("--api-key-file", await keyFile(KEY));
    expect(fromFile.stdout).toContain("You said: hello there");
    expect(fromFile.stderr).not.toContain("warning");
    const flagged = await exec("--api-key", KEY);
    expect(flagged.stdout).toContain("You said: hello there");
    expect(flagged.stderr).toContain("spark: warning: --api-key shows the key");
    const wrong = await exec("--api-key-file", await keyFile("not-the-key"));
    expect(wrong.code).not.toBe(0);
  });

  test("an empty or unreadable key file stops the start, naming the flag", async () => {
    const empty = await keyFile("");
    await expect(serve(["--api-key-file", empty])).rejects.toThrow(
      `--api-key-file ${empty}: the file must hold one key`,
    );
    await expect(serve(["--api-key-file", "/nonexistent/key"])).rejects.toThrow(
      "--api-key-file /nonexistent/key: ENOENT",
    );
  });
});
