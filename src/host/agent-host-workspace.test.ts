import { mkdir, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { formatUnifiedDiff } from "../agent/diff.js";
import type { HostClient } from "../client-core/host-client.js";
import type { Script } from "../engine/scripted/scripted-engine.js";
import { MAX_FILE_MATCHES } from "../protocol/agent-requests.js";
import { AgentHost } from "./agent-host.js";
import { connectHost } from "./test-support/host-client.js";
import { type ScriptedStack, startScriptedStack } from "./test-support/scripted-stack.js";
import { type Cleanups, connectCoreClient } from "./test-support/threadless-host.js";

const patch = (lines: string[]) =>
  JSON.stringify({ patch: ["*** Begin Patch", ...lines, "*** End Patch"].join("\n") });

/** "edit" changes src/parser.ts and adds notes.md; anything else is answered "ok". */
const script: Script = (request) => {
  const last = request.messages.at(-1);
  if (last?.role === "user" && last.content === "edit")
    return {
      toolCalls: [
        {
          name: "apply_patch",
          arguments: patch([
            "*** Update File: src/parser.ts",
            "@@",
            "-export const parse = 1;",
            "+export const parse = 2;",
            "*** Add File: notes.md",
            "+new notes",
          ]),
        },
      ],
    };
  return { text: "ok" };
};

let stack: ScriptedStack;
let client: HostClient;
const cleanups: Cleanups = [];

beforeAll(async () => {
  stack = await startScriptedStack({
    script,
    tokensPerSecond: 2000,
    files: { "README.md": "hello\n" },
    host: ({ newThread }) =>
      new AgentHost({
        create: async () => newThread(),
        resume: async () => null,
        list: async () => [],
        rename: async () => null,
        remove: async () => false,
      }),
  });
  await mkdir(path.join(stack.dir, "src"));
  await writeFile(path.join(stack.dir, "src", "parser.ts"), "export const parse = 1;\n");
  await writeFile(path.join(stack.dir, "src", "printer.ts"), "export const print = 1;\n");
  await mkdir(path.join(stack.dir, "node_modules", "x"), { recursive: true });
  await writeFile(path.join(stack.dir, ".gitignore"), "node_modules\n");
  await writeFile(path.join(stack.dir, "node_modules", "x", "parser.js"), "");
  await symlink("/etc", path.join(stack.dir, "etc-link"));
  client = await connectCoreClient(stack.agentUrl, cleanups);
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await stack.close();
});

describe("agent host: workspace.files and thread.diff", () => {
  test("workspace.files answers the thread's workspace files that match best, bounded, ignored ones left out", async () => {
    const thread = await client.startThread();
    expect(await client.workspaceFiles(thread.id, "par")).toEqual(["src/parser.ts"]);
    expect(await client.workspaceFiles(thread.id, "sr", 1)).toHaveLength(1);
    const all = await client.workspaceFiles(thread.id, "", MAX_FILE_MATCHES);
    expect(all).toContain("README.md");
    expect(all.some((file) => file.startsWith("node_modules/") || file.startsWith(".git/"))).toBe(false);
  });

  test("a workspace.files request out of bounds is refused as invalid, naming the field", async () => {
    const thread = await client.startThread();
    await expect(client.workspaceFiles(thread.id, "a", MAX_FILE_MATCHES + 1)).rejects.toThrow(/limit/);
    await expect(client.workspaceFiles(thread.id, "x".repeat(257))).rejects.toThrow(/query/);
    await expect(client.workspaceFiles("thr_none", "a")).rejects.toThrow(/thr_none/);
  });

  test("thread.diff shows each file the session changed since it began; nothing before an edit", async () => {
    const thread = await client.startThread();
    expect(await client.sessionDiff(thread.id)).toEqual({ files: [], omitted: [], notes: [] });
    const c = await connectHost(stack.agentUrl);
    c.send({ type: "thread.resume", thread_id: thread.id, request_id: "resume" });
    await c.next((e) => e.type === "ack" && e.request_id === "resume");
    c.send({ type: "turn.start", thread_id: thread.id, input: "edit", request_id: "t" });
    await c.next((e) => e.type === "turn.completed");
    const diff = await client.sessionDiff(thread.id);
    expect(diff.files.map((file) => [file.path, file.kind])).toEqual([
      ["src/parser.ts", "update"],
      ["notes.md", "add"],
    ]);
    expect(formatUnifiedDiff(diff.files[0]!)).toContain(
      "-export const parse = 1;\n+export const parse = 2;\n",
    );
    // Put back by hand: no longer a change of the session.
    await writeFile(path.join(stack.dir, "src", "parser.ts"), "export const parse = 1;\n");
    expect((await client.sessionDiff(thread.id)).files.map((file) => file.path)).toEqual(["notes.md"]);
  });
});
