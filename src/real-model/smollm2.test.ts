import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { requestSettings } from "../agent/request-settings.js";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import { toolsFor } from "../agent/tools/index.js";
import { renderPrompt } from "../engine/llama/internal/chat-rendering.js";
import { LlamaEngine } from "../engine/llama/llama-engine.js";
import type { ThreadItem } from "../protocol/agent.js";
import type { ChatMessage } from "../protocol/chat.js";
import type { ResponseCreateBody } from "../protocol/responses-request.js";
import { functionTools } from "../server/input-conversion.js";
import { FETCH_SMOLLM2, smollm2Path } from "./test-support/smollm2.js";
import { type SparkExec, sparkExec } from "./test-support/spark-exec.js";

/**
 * SmolLM2-135M-Instruct, a real instruction-tuned chat model, driven through the real `spark`
 * binary (build first: it runs `dist/`). Greedy decoding (the engine's default), so each run is the
 * same. The output cap and the repetition guard end a reply that would otherwise run until the
 * 4,096-token context is full.
 * A model this small never starts a call by itself (tried with the agent's prompt, Hermes-style
 * tools and its own training format), so the tool tests name the tool with `--tool-choice`: the
 * call grammar then writes a valid call from the first token, and everything after it (running
 * the call, the answer from its output) is the model's and the agent's own.
 */
const model = smollm2Path();
if (!model) console.log(`SmolLM2 tests skipped: no model; fetch it with \`${FETCH_SMOLLM2}\``);

type ToolCallItem = Extract<ThreadItem, { type: "tool_call" }>;

/** Items in the order they completed. */
function completedItems(run: SparkExec): ThreadItem[] {
  return run.events.flatMap((event) => (event.type === "item.completed" ? [event.item] : []));
}

function toolCalls(run: SparkExec, name: string): ToolCallItem[] {
  return completedItems(run).filter(
    (item): item is ToolCallItem => item.type === "tool_call" && item.name === name,
  );
}

/**
 * What the model wrote as answers, finished or not, shortened: failure messages show what it did
 * instead of calling a tool.
 */
function writtenText(run: SparkExec): string {
  const messages = new Set<string>();
  let text = "";
  for (const event of run.events) {
    if (event.type === "item.started" && event.item.type === "agent_message") messages.add(event.item.id);
    else if (event.type === "item.delta" && messages.has(event.item_id)) text += event.delta;
  }
  return JSON.stringify(text.length > 400 ? `${text.slice(0, 400)}…` : text);
}

/**
 * The turn ended by itself and the process said how: completed (exit 0), or stopped by the output
 * cap or the repetition guard (exit 1), as when SmolLM2 answers a tool's output with one sentence
 * over and over.
 */
function expectTurnEnded(run: SparkExec): void {
  expect(run.signal, `spark exec ran past its time; the model wrote ${writtenText(run)}`).toBeNull();
  const last = run.events.at(-1);
  if (last?.type === "turn.completed" && last.status === "failed") {
    expect(last.reason, `the turn failed: ${last.error?.message}`).toMatch(
      /^(repetition|max_output_tokens)$/,
    );
    expect(run.code).toBe(1);
    return;
  }
  expect(run.stderr).not.toMatch(/^spark: /m);
  expect(run.code).toBe(0);
  expect(last).toMatchObject({ type: "turn.completed", status: "completed" });
}

/** The agent's answer after `item`: the text of an agent message that completed later. */
function answerAfter(run: SparkExec, item: ThreadItem): string {
  const items = completedItems(run);
  const after = items.slice(items.indexOf(item) + 1);
  return after
    .flatMap((entry) => (entry.type === "agent_message" ? [entry.text] : []))
    .join("")
    .trim();
}

describe.skipIf(!model)("SmolLM2-135M-Instruct through the real spark binary", () => {
  const modelPath = model!;
  const timeout = 300_000;
  let repo: string;
  let sessions: string;

  beforeAll(async () => {
    // A fixed path: the system prompt names the workspace, and greedy output follows the prompt.
    repo = path.join(await realpath(os.tmpdir()), "spark-smollm2-repo");
    await rm(repo, { recursive: true, force: true });
    await mkdir(repo);
    sessions = await mkdtemp(path.join(os.tmpdir(), "spark-smollm2-sessions-"));
    execFileSync("git", ["init", "-q"], { cwd: repo });
    await mkdir(path.join(repo, "src"));
    await writeFile(path.join(repo, "src", "app.ts"), 'export const name = "demo";\n');
    await writeFile(path.join(repo, "notes.txt"), "The launch code is 4417.\n");
    await writeFile(path.join(repo, "greeting.txt"), "hello\n");
  });

  /** `spark exec` on SmolLM2 in the fixture repository; `args` end with the prompt. */
  const exec = (...args: string[]) =>
    sparkExec(
      ["exec", "--model", modelPath, "--ctx-size", "4096", ...args],
      repo,
      { SPARK_SESSIONS_DIR: sessions },
      timeout - 10_000,
    );

  test(
    "answers a question: a non-empty answer and exit 0",
    async () => {
      const run = await exec("What is the capital of France?");
      expect(run.stderr).not.toMatch(/^spark: /m);
      expect(run.code).toBe(0);
      expect(run.stdout.trim()).toMatch(/Paris/);
    },
    timeout,
  );

  test(
    "calls list_dir: the call runs in the workspace and the model answers from its output",
    async () => {
      const run = await exec("--json", "--tool-choice", "list_dir", 'What is inside the folder "src/"?');
      expectTurnEnded(run);
      const [call] = toolCalls(run, "list_dir");
      expect(call, `no list_dir call; the model wrote ${writtenText(run)}`).toBeDefined();
      expect(call!.status).toBe("completed");
      expect(call!.output).toContain("app.ts");
      expect(answerAfter(run, call!)).not.toBe("");
    },
    timeout,
  );

  test(
    "calls read_file: the call reads the file and the model answers from it",
    async () => {
      const run = await exec("--json", "--tool-choice", "read_file", 'What does the file "notes.txt" say?');
      expectTurnEnded(run);
      const [call] = toolCalls(run, "read_file");
      expect(call, `no read_file call; the model wrote ${writtenText(run)}`).toBeDefined();
      expect(JSON.parse(call!.arguments)).toMatchObject({ path: expect.stringContaining("notes.txt") });
      expect(call!.status).toBe("completed");
      expect(call!.output).toContain("The launch code is 4417.");
      expect(answerAfter(run, call!)).not.toBe("");
    },
    timeout,
  );

  test(
    "attempts an edit with apply_patch: applied, or rejected with an error the model is given",
    async () => {
      const before = await readFile(path.join(repo, "greeting.txt"), "utf8");
      const run = await exec(
        "--json",
        "--tool-choice",
        "apply_patch",
        "Change hello to goodbye in greeting.txt.",
      );
      expectTurnEnded(run);
      const calls = toolCalls(run, "apply_patch");
      expect(calls.length, `no apply_patch call; the model wrote ${writtenText(run)}`).toBeGreaterThan(0);
      const applied = calls.find((call) => call.status === "completed");
      if (applied) {
        // The diff the agent reports is what happened on disk.
        expect(applied.display?.kind).toBe("diff");
        const files = applied.display?.kind === "diff" ? applied.display.files : [];
        for (const file of files) {
          expect(existsSync(path.join(repo, file.path)), file.path).toBe(file.kind !== "delete");
        }
        const greeting = await readFile(path.join(repo, "greeting.txt"), "utf8").catch(() => null);
        if (files.some((file) => file.path === "greeting.txt" || file.from === "greeting.txt"))
          expect(greeting).not.toBe(before);
        else expect(greeting).toBe(before);
      } else {
        // Nothing was written, and the model saw why: the error is the call's output, and the
        // model went on after it (another call or an answer).
        const rejected = calls[0]!;
        expect(rejected.status).toBe("failed");
        expect(rejected.output?.trim()).not.toBe("");
        expect(await readFile(path.join(repo, "greeting.txt"), "utf8")).toBe(before);
        const items = completedItems(run);
        const later = items.slice(items.indexOf(rejected) + 1);
        expect(later.some((item) => item.type === "agent_message" || item.type === "tool_call")).toBe(true);
      }
    },
    timeout,
  );

  describe("the agent's prompt as SmolLM2 sees it", () => {
    let engine: LlamaEngine;
    beforeAll(async () => {
      engine = await LlamaEngine.create({ modelPath, contextSize: 4096, sequences: 1 });
    });
    afterAll(async () => {
      await engine?.dispose();
    });

    test("renders the system prompt, the tools, a call and its result with the model's template", async () => {
      // What AgentThread sends and the server hands the engine, for a fixed workspace path.
      const settings = requestSettings({
        model: "",
        instructions: buildSystemPrompt("/workspace", []),
        tools: toolsFor(),
      });
      const tools = functionTools({ tools: settings.tools } as ResponseCreateBody);
      const messages: ChatMessage[] = [
        { role: "system", content: settings.instructions },
        { role: "user", content: "What is in notes.txt?" },
        {
          role: "assistant",
          content: "",
          toolCalls: [{ callId: "call_1", name: "read_file", arguments: '{"path":"notes.txt"}' }],
        },
        { role: "tool", callId: "call_1", name: "read_file", content: "1\tThe launch code is 4417." },
      ];
      const rendered = renderPrompt(engine.model, engine.chatWrapper, messages, tools);
      const text = engine.model.detokenize(rendered.tokens, true);
      expect(text).toContain(settings.instructions);
      await expect(text).toMatchFileSnapshot("__snapshots__/smollm2-agent-prompt.txt");
    });
  });
});
