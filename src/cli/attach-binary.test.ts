import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtemp, realpath, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { listServerStates, type ServerState } from "../config/server-state.js";
import { connectHost, type HostTestClient } from "../host/test-support/host-client.js";
import type { ThreadInfo } from "../protocol/agent.js";
import { sparkBin as bin } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

interface Running {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number>;
  /** Resolves with the first match of `pattern` in stderr; rejects if the process exits first. */
  stderrMatch(pattern: RegExp): Promise<RegExpMatchArray>;
}

/** Runs the real `spark` binary (built by `npm run build` first). */
function spark(args: string[], cwd: string, env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, [bin, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const waiters = new Set<() => void>();
  child.stdout!.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr!.on("data", (chunk) => {
    stderr += chunk;
    for (const waiter of [...waiters]) waiter();
  });
  const exit = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exit,
    stderrMatch: (pattern) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = stderr.match(pattern);
          if (!match) return;
          waiters.delete(check);
          resolve(match);
        };
        waiters.add(check);
        check();
        void exit.then(() => {
          if (waiters.delete(check)) reject(new Error(`spark exited before ${pattern}:\n${stderr}`));
        });
      }),
  };
}

describe("spark on a running spark serve (the real binary)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let serve: Running;
  let state: ServerState;
  let watcher: HostTestClient;

  beforeAll(async () => {
    repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-attach-")));
    execFileSync("git", ["init", "-q"], { cwd: repo });
    await writeFile(path.join(repo, "main.ts"), "console.log('hi');\n");
    const script = path.join(await mkdtemp(path.join(os.tmpdir(), "spark-attach-script-")), "s.json");
    await writeFile(
      script,
      JSON.stringify([
        { match: "run the tests", toolCalls: [{ name: "shell", arguments: '{"command":"true"}' }] },
        { text: "All done." },
      ]),
    );
    const { SPARK_HOME: _, SPARK_API_KEY: __, ...inherited } = process.env;
    env = {
      ...inherited,
      XDG_STATE_HOME: await mkdtemp(path.join(os.tmpdir(), "spark-attach-state-")),
      SPARK_SESSIONS_DIR: await mkdtemp(path.join(os.tmpdir(), "spark-attach-sessions-")),
    };
    serve = spark(["serve", "--port", "0"], repo, { ...env, ...testEngineEnv({ script }) });
    await serve.stderrMatch(/Press Ctrl\+C/);
    [state] = (await listServerStates({ env })) as [ServerState];
    expect(state.workspace).toBe(repo);
    watcher = await connectHost(`${state.url.replace(/^http/, "ws")}/v1/agent`, [
      "spark.v1",
      `spark.key.${Buffer.from(state.key!).toString("base64url")}`,
    ]);
  }, 60_000);

  afterAll(async () => {
    watcher?.ws.close();
    serve?.child.kill("SIGINT");
    await serve?.exit;
  });

  /** The threads of this workspace the server lists now. */
  async function listed(): Promise<ThreadInfo[]> {
    const mark = watcher.events.length;
    watcher.send({ type: "thread.list", workspace: repo });
    return (await watcher.next((e) => e.type === "thread.list", mark)).threads as ThreadInfo[];
  }

  test("spark exec attaches: its thread is on the server, live to another client, which answers its approval", async () => {
    const exec = spark(["exec", "--json", "please run the tests"], repo, env);
    // The terminal's turn asks for approval and leaves it to the other faces.
    const [, command] = await exec.stderrMatch(/`(.+)` waits for approval in the web app/);
    expect(command).toBe("true");

    const thread = (await listed()).find((info) => info.title === "please run the tests");
    expect(thread).toBeDefined();
    const mark = watcher.events.length;
    watcher.send({ type: "thread.resume", thread_id: thread!.id, request_id: "watch" });
    const requested = await watcher.next((e) => e.type === "approval.requested", mark);
    expect(requested).toMatchObject({ thread_id: thread!.id, command: "true" });
    watcher.send({
      type: "approval.respond",
      thread_id: thread!.id,
      approval_id: requested.approval_id,
      approved: true,
      request_id: "approve",
    });
    expect(await watcher.next((e) => e.request_id === "approve", mark)).toMatchObject({ type: "ack" });
    // The rest of the turn streams live to this client too.
    const done = await watcher.next((e) => e.type === "turn.completed", mark);
    expect(done).toMatchObject({ thread_id: thread!.id, status: "completed" });
    const text = watcher.events
      .slice(mark)
      .filter((e) => e.type === "item.delta" && e.thread_id === thread!.id)
      .map((e) => e.delta)
      .join("");
    expect(text).toContain("All done.");

    expect(await exec.exit).toBe(0);
    const events = exec
      .stdout()
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string; approved?: boolean; status?: string });
    expect(events.find((e) => e.type === "approval.resolved")).toMatchObject({ approved: true });
    expect(events.at(-1)).toMatchObject({ type: "turn.completed", status: "completed" });
  }, 60_000);

  test("an exec denied its approval by another client fails, and --no-attach runs its own agent", async () => {
    const exec = spark(["exec", "please run the tests again"], repo, env);
    await exec.stderrMatch(/waits for approval/);
    const thread = (await listed()).find((info) => info.title === "please run the tests again")!;
    const mark = watcher.events.length;
    watcher.send({ type: "thread.resume", thread_id: thread.id });
    const requested = await watcher.next((e) => e.type === "approval.requested", mark);
    watcher.send({ type: "turn.interrupt", thread_id: thread.id });
    await watcher.next(
      (e) => e.type === "approval.resolved" && e.approval_id === requested.approval_id,
      mark,
    );
    expect(await exec.exit).toBe(1);
    expect(exec.stderr()).toContain("spark: interrupted");

    // Its own agent, its own sessions folder: the server never hears of the thread.
    const before = (await listed()).length;
    const sessions = await mkdtemp(path.join(os.tmpdir(), "spark-attach-own-"));
    const own = spark(["exec", "--no-attach", "hello"], repo, {
      ...env,
      ...testEngineEnv(),
      SPARK_SESSIONS_DIR: sessions,
    });
    expect(await own.exit).toBe(0);
    expect(own.stdout()).toContain("hello");
    expect(await listed()).toHaveLength(before);
  }, 60_000);
});
