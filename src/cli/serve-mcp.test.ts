import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { connectHost, type HostTestClient } from "../host/test-support/host-client.js";
import { runSpark, startWorkspaceServe, type WorkspaceServe } from "./test-support/spark-binary.js";
import { testEngineEnv } from "./test-support/test-engine.js";

/** The reference MCP server from npm, run over stdio with this Node. */
const EVERYTHING = path.resolve("node_modules/@modelcontextprotocol/server-everything/dist/index.js");

let serve: WorkspaceServe;
let watcher: HostTestClient;

beforeAll(async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-serve-mcp-"));
  const config = path.join(dir, "config.toml");
  await writeFile(
    config,
    `[mcp_servers.everything]\ncommand = ${JSON.stringify(process.execPath)}\nargs = [${JSON.stringify(EVERYTHING)}, "stdio"]\n`,
  );
  const script = path.join(dir, "script.json");
  await writeFile(
    script,
    JSON.stringify([
      { match: "add", toolCalls: [{ name: "mcp__everything__get-sum", arguments: '{"a":2,"b":3}' }] },
      { text: "All done." },
    ]),
  );
  serve = await startWorkspaceServe([], { SPARK_CONFIG: config, ...testEngineEnv({ script }) });
  watcher = await connectHost(`${serve.state.url.replace(/^http/, "ws")}/v1/agent`, [
    "spark.v1",
    `spark.key.${Buffer.from(serve.state.key!).toString("base64url")}`,
  ]);
}, 60_000);

afterAll(async () => {
  watcher?.ws.close();
  await serve?.stop();
});

test("spark serve starts config.toml's MCP servers, lists them to every face, and its agent calls their tools with approval", async () => {
  const ready = await watcher.next(
    (e) =>
      e.type === "mcp.servers" &&
      (e.servers as { name: string; state: string }[]).some(
        (s) => s.name === "everything" && s.state === "ready",
      ),
    0,
  );
  const [everything] = ready.servers as { tools: string[]; transport: string; source: string }[];
  expect(everything).toMatchObject({ transport: "stdio", source: "user", trusted: false });
  expect(everything!.tools).toContain("mcp__everything__get-sum");

  // `spark exec` attaches to this server; its MCP call waits for an approval from another face.
  const mark = watcher.events.length;
  const exec = runSpark(["exec", "--json", "add 2 and 3"], serve.repo, serve.env);
  // The server lists the new thread to every client once its first message is in.
  const listed = await watcher.next((e) => e.type === "thread.listed", mark);
  const thread = listed.thread as { id: string };
  watcher.send({ type: "thread.resume", thread_id: thread.id, request_id: "watch" });
  const requested = await watcher.next((e) => e.type === "approval.requested", mark);
  expect(requested).toMatchObject({ kind: "mcp", server: "everything", tool: "get-sum" });
  expect(JSON.parse(requested.arguments as string)).toEqual({ a: 2, b: 3 });
  watcher.send({
    type: "approval.respond",
    thread_id: thread.id,
    approval_id: requested.approval_id,
    approved: true,
    request_id: "approve",
  });
  const call = await watcher.next(
    (e) => e.type === "item.completed" && (e.item as { type: string }).type === "tool_call",
    mark,
  );
  expect(call.item).toMatchObject({ name: "mcp__everything__get-sum", status: "completed" });
  expect((call.item as { output: string }).output).toContain("5");
  const run = await exec;
  expect(run.code).toBe(0);
  expect(run.stdout).toContain("All done.");
}, 60_000);
