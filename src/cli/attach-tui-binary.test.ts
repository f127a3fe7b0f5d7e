import { afterAll, expect, test } from "vitest";
import { connectHost } from "../host/test-support/host-client.js";
import type { ThreadInfo } from "../protocol/agent.js";
import {
  startAttachedSpark,
  startWorkspaceServe,
  tmuxSession,
  type WorkspaceServe,
} from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

const term = tmuxSession(`spark-attach-test-${process.pid}`);
const { tmux, waitForScreen } = term;
const session = term.name;

let serve: WorkspaceServe | null = null;
afterAll(async () => {
  term.kill();
  await serve?.stop();
});

test("spark in a terminal attaches to spark serve: another client sees its turn live, steers and interrupts it", async () => {
  serve = await startWorkspaceServe([], testEngineEnv({ tokensPerSecond: 30 }));
  const { repo, state } = serve;
  startAttachedSpark(term, serve);
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
