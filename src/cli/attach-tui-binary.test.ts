import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtemp, realpath } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, expect, test } from "vitest";
import { listServerStates, type ServerState } from "../config/server-state.js";
import { connectHost } from "../host/test-support/host-client.js";
import type { ThreadInfo } from "../protocol/agent.js";
import { sparkBin, tmuxSession } from "./test-support/spark-binary.js";

const bin = sparkBin;
const term = tmuxSession(`spark-attach-test-${process.pid}`);
const { tmux, waitForScreen } = term;
const session = term.name;

let serve: ChildProcess | null = null;
afterAll(async () => {
  term.kill();
  if (serve && serve.exitCode === null) {
    const exited = new Promise((resolve) => serve!.once("exit", resolve));
    serve.kill("SIGINT");
    await exited;
  }
});

test("spark in a terminal attaches to spark serve: another client sees its turn live, steers and interrupts it", async () => {
  const repo = await realpath(await mkdtemp(path.join(os.tmpdir(), "spark-attach-tui-")));
  execFileSync("git", ["init", "-q"], { cwd: repo });
  const { SPARK_HOME: _, SPARK_API_KEY: __, ...inherited } = process.env;
  const env = {
    ...inherited,
    XDG_STATE_HOME: await mkdtemp(path.join(os.tmpdir(), "spark-attach-tui-state-")),
    SPARK_SESSIONS_DIR: await mkdtemp(path.join(os.tmpdir(), "spark-attach-tui-sessions-")),
  };
  const child = spawn(
    process.execPath,
    [bin, "serve", "--engine", "scripted", "--tokens-per-second", "30", "--port", "0"],
    { cwd: repo, env, stdio: ["ignore", "ignore", "pipe"] },
  );
  serve = child;
  let stderr = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (chunk) => {
      stderr += chunk;
      if (stderr.includes("Press Ctrl+C")) resolve();
    });
    child.once("exit", () => reject(new Error(`spark serve exited:\n${stderr}`)));
  });
  const [state] = (await listServerStates({ env })) as [ServerState];

  const command = [
    `cd ${repo} &&`,
    `XDG_STATE_HOME=${env.XDG_STATE_HOME}`,
    `SPARK_SESSIONS_DIR=${env.SPARK_SESSIONS_DIR}`,
    `"${process.execPath}" "${bin}"`,
  ].join(" ");
  tmux(
    "new-session",
    "-d",
    "-s",
    session,
    "-x",
    "120",
    "-y",
    "40",
    "-e",
    "CI=false",
    "-e",
    "SPARK_HOME=",
    command,
  );
  await waitForScreen(/Ask Spark|\/help/);
  const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ");
  tmux("send-keys", "-t", session, "-l", `first ${words}`);
  tmux("send-keys", "-t", session, "Enter");
  await waitForScreen(/You said: first word0 word1/);

  // The terminal's thread is on the server: another client finds it and follows it live.
  const watcher = await connectHost(`${state.url.replace(/^http/, "ws")}/v1/agent`, [
    "spark.v1",
    `spark.key.${Buffer.from(state.key!).toString("base64url")}`,
  ]);
  watcher.send({ type: "thread.list", workspace: repo });
  const list = await watcher.next((e) => e.type === "thread.list");
  const thread = (list.threads as ThreadInfo[])[0]!;
  expect(thread.title).toMatch(/^first word0/);
  watcher.send({ type: "thread.resume", thread_id: thread.id });
  await watcher.next((e) => e.type === "item.delta" && e.thread_id === thread.id);

  // A steer from the other client lands in the terminal's running turn.
  // The steer is long too, so its echo is still streaming when the interrupt below arrives.
  const steerWords = Array.from({ length: 200 }, (_, i) => `steer${i}`).join(" ");
  watcher.send({
    type: "turn.steer",
    thread_id: thread.id,
    input: `STEER FROM THE BROWSER ${steerWords}`,
    request_id: "s",
  });
  expect(await watcher.next((e) => e.request_id === "s")).toMatchObject({ type: "ack" });
  // The terminal shows the steer, and the model's stream changes course with it.
  await waitForScreen(/You said: STEER/);

  // An interrupt from the other client stops the terminal's turn.
  watcher.send({ type: "turn.interrupt", thread_id: thread.id });
  const done = await watcher.next((e) => e.type === "turn.completed");
  expect(done).toMatchObject({ status: "interrupted" });
  const after = await waitForScreen(/[Ii]nterrupted/);
  // Both echoes stopped short: "word199" and "steer199" show only in the messages themselves.
  expect(after.split("word199")).toHaveLength(2);
  expect(after.split("steer199")).toHaveLength(2);
  watcher.ws.close();
}, 90_000);
