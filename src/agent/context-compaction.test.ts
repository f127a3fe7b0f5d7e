import { describe, expect, test } from "vitest";
import type { ContextUsage, ThreadEvent } from "../protocol/agent.js";
import { SparkError } from "../protocol/errors.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { recordResponseUsage } from "./test-support/response-usage.js";
import { recorded } from "./test-support/scripted-replies.js";

const AGENTS_MD = "AGENTS.md: indent with tabs and run npm test before you finish.";
const STANDING = "Standing rule for this session: answer in French.";
const PLAN = "Plan: 1. split the tokenizer 2. parse statements 3. add tests";
const long = (words: number) => Array.from({ length: words }, (_, i) => `w${i}`).join(" ");

/**
 * A thread without tools (the scripted engine counts words: the prompt stays small), 4000 tokens of
 * window, at most 1000 a reply: compact_at 0.2 is 800 tokens, 0.8 is 3000 (the output cap's room).
 */
function options(compactAt: number) {
  return {
    instructions: `You are Spark.\n${AGENTS_MD}`,
    allowedTools: [] as string[],
    contextBudget: 4000,
    maxOutputTokens: 1000,
    compactAt,
  };
}

const notices = (events: ThreadEvent[]) =>
  events.flatMap((e) => (e.type === "item.completed" && e.item.type === "notice" ? [e.item.text] : []));
const meters = (events: ThreadEvent[]) =>
  events.flatMap((e) => (e.type === "context.updated" ? [e.context] : []));

/** Four turns: the standing instructions, a plan in plan mode, a short one, a long answer (900 tokens). */
async function fourTurns(h: Awaited<ReturnType<typeof agentHarness>>) {
  await h.thread.startTurn(STANDING);
  await h.thread.startTurn("plan the parser", { mode: "plan" });
  await h.thread.startTurn("ok", { mode: "default" });
  await h.thread.startTurn("write it all out");
}

const script = () =>
  recorded([{ text: "D'accord." }, { text: PLAN }, { text: "Bien." }, { text: long(900) }]);

describe("context meter and compaction", () => {
  test("every model response reports the context: input (cached included) and output of the window", async () => {
    const model = script();
    await using h = await agentHarness({}, { script: model.script }, options(0.8));
    const usage = recordResponseUsage(h.client, () => 0);
    await fourTurns(h);
    const reported = meters(h.events);
    expect(reported).toEqual(
      usage.map(
        (u): ContextUsage => ({
          used_tokens: u.input + u.output,
          window_tokens: 4000,
          compact_at_tokens: 3000,
        }),
      ),
    );
    expect(h.thread.contextUsage).toEqual(reported.at(-1));
    // Each is stamped with its turn.
    const turns = h.events.flatMap((e) => (e.type === "turn.started" ? [e.turn_id] : []));
    expect(h.events.flatMap((e) => (e.type === "context.updated" ? [e.turn_id] : []))).toEqual(turns);
  });

  // Also the regression "a compaction before a turn's first request sent its message twice".
  test("past compact_at the next request compacts: AGENTS.md, the first message and the plan are kept word for word", async () => {
    const model = script();
    await using h = await agentHarness({}, { script: model.script }, options(0.2));
    await fourTurns(h);
    const before = meters(h.events).at(-1)!;
    expect(before.used_tokens).toBeGreaterThan(800);
    expect(before.compact_at_tokens).toBe(800);
    expect(notices(h.events)).toEqual([]);

    await h.thread.startTurn("next");
    const [after] = meters(h.events).slice(-2);
    expect(notices(h.events)).toEqual([
      `Context compacted: ${before.used_tokens} -> ${after!.used_tokens} tokens (the conversation passed 800 of the 4,000-token window).`,
    ]);
    expect(after!.used_tokens).toBeLessThan(before.used_tokens);
    const request = JSON.parse(h.sent.at(-1)!);
    expect(request.instructions).toContain(AGENTS_MD);
    expect(request.previous_response_id).toBeUndefined();
    const digest = request.input[0];
    expect(digest.role).toBe("developer");
    expect(digest.content).toContain(`word for word:\n${STANDING}`);
    expect(digest.content).toContain(`plan mode, word for word:\n${PLAN}`);
    // The last two turns stay whole; the new message goes once, last.
    expect(request.input.slice(1).map((m: { content: string }) => m.content)).toEqual([
      "ok",
      "Bien.",
      "write it all out",
      long(900),
      "next",
    ]);
    // The model saw the kept text: the engine's prompt has it.
    const prompt = model.requests
      .at(-1)!
      .messages.map((m) => m.content)
      .join("\n");
    expect(prompt).toContain(STANDING);
    expect(prompt).toContain(PLAN);
    expect(prompt).toContain(AGENTS_MD);
  });

  test("regression (a compaction between a tool call and its answer sent the call's output twice): mid-turn, each output goes once", async () => {
    // compact_at 0.3 is 1200 tokens: the long answer stays below it, the next turn's first response passes it.
    const model = recorded([
      { text: "D'accord." },
      { text: long(900) },
      { text: long(400), toolCalls: [{ name: "read_file", arguments: JSON.stringify({ path: "a.txt" }) }] },
      { text: "It says alpha." },
    ]);
    await using h = await agentHarness(
      { "a.txt": "alpha\n" },
      { script: model.script },
      { ...options(0.3), allowedTools: ["read_file"] },
    );
    await h.thread.startTurn(STANDING);
    await h.thread.startTurn("write it all out");
    expect(meters(h.events).at(-1)!.used_tokens).toBeLessThan(1200);
    await h.thread.startTurn("read a.txt");
    expect(notices(h.events)).toEqual([expect.stringMatching(/^Context compacted: /)]);
    const request = JSON.parse(h.sent.at(-1)!);
    expect(request.previous_response_id).toBeUndefined();
    const outputs = request.input.filter((entry: { type?: string }) => entry.type === "function_call_output");
    expect(outputs).toHaveLength(1);
    expect(h.events.findLast((e) => e.type === "turn.completed")).toMatchObject({ status: "completed" });
    expect(model.requests).toHaveLength(4);
  });

  test("below compact_at nothing is compacted", async () => {
    const model = script();
    await using h = await agentHarness({}, { script: model.script }, options(0.8));
    await fourTurns(h);
    expect(meters(h.events).at(-1)!.used_tokens).toBeLessThan(3000);
    await h.thread.startTurn("next");
    expect(notices(h.events)).toEqual([]);
    expect(JSON.parse(h.sent.at(-1)!).previous_response_id).toMatch(/^resp_/);
  });

  test("/compact by hand keeps the focus and the last turn, says so, and the next request starts over with it", async () => {
    const model = script();
    await using h = await agentHarness({}, { script: model.script }, options(0.8));
    await fourTurns(h);
    const before = meters(h.events).at(-1)!.used_tokens;
    const compacted = await h.thread.compact("the tokenizer");
    expect(compacted).not.toBeNull();
    expect(compacted!.beforeTokens).toBe(before);
    expect(notices(h.events)).toEqual([`Context compacted: ${before} -> ${compacted!.afterTokens} tokens.`]);
    expect(meters(h.events).at(-1)).toEqual({
      used_tokens: compacted!.afterTokens,
      window_tokens: 4000,
      compact_at_tokens: 3000,
    });
    const compactedEvent = h.events.findLast((e) => e.type === "context.updated")!;
    expect(compactedEvent).not.toHaveProperty("turn_id");
    await h.thread.startTurn("go on");
    const request = JSON.parse(h.sent.at(-1)!);
    expect(request.previous_response_id).toBeUndefined();
    expect(request.input[0].content).toContain("The user asked to keep this in focus: the tokenizer");
    expect(request.input[0].content).toContain(PLAN);
    expect(request.input.slice(1).map((m: { content: string }) => m.content)).toEqual([
      "write it all out",
      long(900),
      "go on",
    ]);
  });

  test("/compact with one turn only says there is nothing to compact and changes nothing", async () => {
    const model = script();
    await using h = await agentHarness({}, { script: model.script }, options(0.8));
    await h.thread.startTurn(STANDING);
    expect(await h.thread.compact()).toBeNull();
    expect(notices(h.events)).toEqual([
      `Nothing to compact yet: the conversation holds ${meters(h.events).at(-1)!.used_tokens} tokens and its last turn stays whole.`,
    ]);
    await h.thread.startTurn("again");
    expect(JSON.parse(h.sent.at(-1)!).previous_response_id).toMatch(/^resp_/);
  });

  test("/compact while a turn runs is refused", async () => {
    await using h = await agentHarness({}, { tokensPerSecond: 20 }, options(0.8));
    const running = h.thread.startTurn("a long echo to keep the turn busy");
    const error = await h.thread.compact().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SparkError);
    expect((error as SparkError).code).toBe("response_in_progress");
    h.thread.interrupt();
    await running;
  });

  test("compact_at outside 0.1 to 0.95 is refused", async () => {
    for (const share of [0.05, 0.99, Number.NaN]) {
      await expect(agentHarness({}, {}, options(share))).rejects.toThrow(
        /compact_at must be from 0.1 to 0.95/,
      );
    }
  });
});
