#!/usr/bin/env node
// Prints one ACP session with `spark acp` as an editor sees it: every JSON-RPC line, `>` from the
// editor, `<` from Spark. It runs the built binary (npm run build) through the test entry point
// (src/cli/test-support/spark-test-bin.ts) on the scripted test engine in a
// throwaway git repository, so no model is needed: a prompt that edits a file (the diff streams),
// one whose command asks permission (allowed here), one steered and one cancelled mid-answer.
// Usage: node scripts/acp-transcript.mjs
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { ensureTestBin } from "./build-test-bin.mjs";

const bin = await ensureTestBin();
const scratch = mkdtempSync(path.join(os.tmpdir(), "spark-acp-transcript-"));
const repo = realpathSync(mkdtempSync(path.join(os.tmpdir(), "spark-acp-repo-")));
execFileSync("git", ["init", "-q"], { cwd: repo });
writeFileSync(path.join(repo, "app.ts"), "export const port = 8080;\n");
const patch =
  "*** Begin Patch\n*** Update File: app.ts\n@@\n-export const port = 8080;\n+export const port = 9090;\n*** End Patch";
const story = Array.from({ length: 100 }, (_, i) => `word${i}`).join(" ");
writeFileSync(
  path.join(scratch, "script.json"),
  JSON.stringify([
    { match: "port", toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch }) }] },
    {
      match: "tests",
      toolCalls: [{ name: "shell", arguments: JSON.stringify({ command: "echo 3 passed" }) }],
    },
    { match: "story", text: story },
    { match: "shorter", text: "Once upon a time, the end." },
    { text: "Done." },
  ]),
);

const child = spawn(process.execPath, [bin, "acp"], {
  cwd: repo,
  env: {
    ...process.env,
    SPARK_SESSIONS_DIR: path.join(scratch, "sessions"),
    XDG_STATE_HOME: path.join(scratch, "state"),
    SPARK_TEST_ENGINE: JSON.stringify({ script: path.join(scratch, "script.json"), tokens_per_second: 50 }),
  },
  stdio: ["pipe", "pipe", "inherit"],
});

const answers = new Map();
let nextId = 0;
let onUpdate = () => {};
const write = (message) => {
  const line = JSON.stringify({ jsonrpc: "2.0", ...message });
  console.log(`> ${line}`);
  child.stdin.write(`${line}\n`);
};
const request = (method, params) =>
  new Promise((resolve) => {
    const id = ++nextId;
    answers.set(id, resolve);
    write({ id, method, params });
  });

createInterface({ input: child.stdout }).on("line", (line) => {
  console.log(`< ${line}`);
  const message = JSON.parse(line);
  if (message.method === "session/request_permission") {
    write({ id: message.id, result: { outcome: { outcome: "selected", optionId: "allow" } } });
  } else if (message.method === "session/update") {
    onUpdate(message.params.update);
  } else if (message.id !== undefined && answers.has(message.id)) {
    answers.get(message.id)(message);
    answers.delete(message.id);
  }
});

await request("initialize", { protocolVersion: 1, clientCapabilities: {} });
const { result } = await request("session/new", { cwd: repo, mcpServers: [] });
const sessionId = result.sessionId;
const text = (value) => [{ type: "text", text: value }];
await request("session/prompt", { sessionId, prompt: text("Set the port to 9090") });
await request("session/prompt", { sessionId, prompt: text("Run the tests") });
// Steering (Spark's extension): the running answer is redirected, and its prompt ends as usual.
const steered = request("session/prompt", { sessionId, prompt: text("Tell me a story") });
await new Promise((resolve) => {
  onUpdate = (update) => update.sessionUpdate === "agent_message_chunk" && resolve();
});
onUpdate = () => {};
await request("_spark/steer", { sessionId, prompt: text("Make it shorter") });
await steered;
// Cancelling: the prompt ends `cancelled`.
const storyTurn = request("session/prompt", { sessionId, prompt: text("Tell me a story again") });
await new Promise((resolve) => {
  onUpdate = (update) => update.sessionUpdate === "agent_message_chunk" && resolve();
});
onUpdate = () => {};
write({ method: "session/cancel", params: { sessionId } });
await storyTurn;
child.stdin.end();
