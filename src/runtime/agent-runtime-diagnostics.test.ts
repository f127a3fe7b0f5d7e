import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { EditDiagnostics } from "../agent/diagnostics/edit-diagnostics.js";
import { CommandSandbox } from "../agent/sandbox/command-sandbox.js";
import type { ResolvedConfig } from "../config/spark-config.js";
import type { GenerateRequest } from "../engine/engine.js";
import type { ThreadItem } from "../protocol/agent.js";
import { AgentRuntime } from "./agent-runtime.js";
import { scriptedTiers } from "./test-support/scripted-tiers.js";

const PATCH = [
  "*** Begin Patch",
  "*** Update File: src/count.ts",
  "-export const count: number = 1;",
  '+export const count: number = "one";',
  "*** End Patch",
].join("\n");

/** Runs one turn whose model writes PATCH (a type error), then answers; the tool call and what the model read. */
async function editOnce(diagnostics: boolean | undefined) {
  const dir = await mkdtemp(path.join(os.tmpdir(), "spark-runtime-diagnostics-"));
  await mkdir(path.join(dir, "src"));
  await writeFile(
    path.join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { strict: true }, include: ["src"] }),
  );
  await writeFile(path.join(dir, "src/count.ts"), "export const count: number = 1;\n");
  const requests: GenerateRequest[] = [];
  const config: ResolvedConfig = {
    defaultTier: "fast",
    delegateTier: null,
    tiers: { fast: { engine: "llama" } },
    ...(diagnostics === undefined ? {} : { diagnostics }),
    sources: [],
  };
  try {
    await using runtime = await AgentRuntime.start({
      cwd: dir,
      config,
      // The built-in servers with a longer wait for a cold start on a busy test machine.
      ...(diagnostics === undefined
        ? {
            diagnostics: new EditDiagnostics({
              root: await realpath(dir),
              sandbox: new CommandSandbox(),
              startBudgetMs: 60_000,
            }),
          }
        : {}),
      prewarm: false,
      sessionsDir: path.join(dir, ".sessions"),
      loadTier: scriptedTiers({
        fast: {
          script: (request) => {
            requests.push(request);
            return requests.length === 1
              ? { toolCalls: [{ name: "apply_patch", arguments: JSON.stringify({ patch: PATCH }) }] }
              : { text: "Done." };
          },
        },
      }),
    });
    const { thread } = await runtime.newThread();
    const items: ThreadItem[] = [];
    thread.on((event) => {
      if (event.type === "item.completed") items.push(event.item);
    });
    await thread.startTurn("make count a word");
    const call = items.find((item) => item.type === "tool_call");
    if (call?.type !== "tool_call") throw new Error("no tool call");
    return {
      call,
      seen: requests[1]?.messages.find((message) => message.role === "tool")?.content,
      file: await readFile(path.join(dir, "src/count.ts"), "utf8"),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("the runtime's language servers report an edit's new errors to the model and under the diff", async () => {
  const { call, seen, file } = await editOnce(undefined);
  const error = "src/count.ts:1:14: Type 'string' is not assignable to type 'number'. (2322)";
  expect(call.status).toBe("completed");
  expect(call.output).toBe(`Updated src/count.ts (+1 -1)\nErrors this edit introduced (fix them):\n${error}`);
  expect(seen).toContain(error);
  expect(call.display).toMatchObject({
    kind: "diff",
    diagnostics: [{ path: "src/count.ts", line: 1, column: 14 }],
  });
  expect(file).toBe('export const count: number = "one";\n');
});

test("[diagnostics] enabled = false starts no server and leaves the result as it was", async () => {
  const { call, file } = await editOnce(false);
  expect(call.output).toBe("Updated src/count.ts (+1 -1)");
  expect(call.display).not.toHaveProperty("diagnostics");
  expect(call.display).not.toHaveProperty("diagnosticsNotices");
  expect(file).toBe('export const count: number = "one";\n');
});
