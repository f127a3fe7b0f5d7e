import { describe, expect, test } from "vitest";
import type { GenerateRequest } from "../engine/engine.js";
import type { ScriptedReply } from "../engine/scripted/scripted-engine.js";
import type { ThreadEvent } from "../protocol/agent.js";
import { defaultMaxOutputTokens } from "./request-settings.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { MAX_SAME_CALLS } from "./turn-runner.js";

const lastUser = (request: GenerateRequest) =>
  [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";

const completedTurn = (events: ThreadEvent[]) => {
  const done = events.find((e) => e.type === "turn.completed");
  if (done?.type !== "turn.completed") throw new Error("no turn.completed");
  return done;
};

const toolItems = (events: ThreadEvent[]) => {
  const items = new Map<string, string>();
  for (const event of events) {
    if ((event.type === "item.started" || event.type === "item.completed") && event.item.type === "tool_call")
      items.set(event.item.id, event.item.status);
  }
  return items;
};

describe("turns that end at a limit", () => {
  test("every request carries an output cap: by default a quarter of the context, from 256 to 16384", async () => {
    expect(defaultMaxOutputTokens(8192)).toBe(2048);
    expect(defaultMaxOutputTokens(1024)).toBe(256);
    expect(defaultMaxOutputTokens(128_000)).toBe(16_384);
    await using h = await agentHarness({}, {}, { contextBudget: 8192 });
    await h.thread.startTurn("hi");
    expect(JSON.parse(h.sent.at(-1)!)).toMatchObject({ max_output_tokens: 2048 });
    await using set = await agentHarness({}, {}, { maxOutputTokens: 77 });
    await set.thread.startTurn("hi");
    expect(JSON.parse(set.sent.at(-1)!)).toMatchObject({ max_output_tokens: 77 });
  });

  test("a reply cut by the output cap ends the turn failed, with reason max_output_tokens and a message saying so", async () => {
    const rambling = { text: Array.from({ length: 200 }, (_, i) => `word${i}`).join(" ") };
    await using h = await agentHarness(
      {},
      { script: [rambling, { text: "short" }] },
      { maxOutputTokens: 20 },
    );
    await h.thread.startTurn("talk");
    const done = completedTurn(h.events);
    expect(done).toMatchObject({
      status: "failed",
      reason: "max_output_tokens",
      error: { code: "limit_reached" },
    });
    expect(done.error?.message).toMatch(/^Stopped: the reply reached its output limit of 20 tokens/);
    expect(done.error?.message).toContain("--max-output-tokens");
    // The next turn goes on from the cut reply.
    await h.thread.startTurn("go on");
    expect(h.events.filter((e) => e.type === "turn.completed").at(-1)).toMatchObject({ status: "completed" });
  });

  test("a reply that repeats one line is stopped: the turn says the model was repeating itself", async () => {
    const looping = { text: "The files here are:\n".repeat(400) };
    await using h = await agentHarness(
      {},
      { script: [looping, { text: "ok" }] },
      { maxOutputTokens: 100_000 },
    );
    await h.thread.startTurn("List the files here.");
    const done = completedTurn(h.events);
    expect(done).toMatchObject({ status: "failed", reason: "repetition", error: { code: "limit_reached" } });
    expect(done.error?.message).toMatch(/^Stopped: the model was repeating itself \(".*files here/);
    const message = h.thread.history.findLast((item) => item.type === "agent_message");
    // Cancelled once the loop showed: far short of the 8,000 characters the model would have written.
    expect(message?.type === "agent_message" && message.text.length).toBeLessThan(2000);
    await h.thread.startTurn("go on");
    expect(h.events.filter((e) => e.type === "turn.completed").at(-1)).toMatchObject({ status: "completed" });
  });

  test("nested JSON rambling inside a streamed tool call is stopped; the call ends failed and never runs", async () => {
    const nested = `{"path": ${'{"path": '.repeat(500)}"."}`;
    const script = (request: GenerateRequest): ScriptedReply =>
      lastUser(request) === "go on"
        ? { text: "ok" }
        : { toolCalls: [{ name: "list_dir", arguments: nested }] };
    await using h = await agentHarness({ "a.txt": "a" }, { script }, { maxOutputTokens: 100_000 });
    await h.thread.startTurn("List the files here.");
    expect(completedTurn(h.events)).toMatchObject({ status: "failed", reason: "repetition" });
    const items = toolItems(h.events);
    expect(items.size).toBe(1);
    expect([...items.values()]).toEqual(["failed"]);
    const cut = h.events.find((e) => e.type === "item.completed" && e.item.type === "tool_call");
    expect(cut?.type === "item.completed" && cut.item).toMatchObject({
      partial: true,
      output: expect.stringMatching(/^Not applied: the model was repeating itself/),
    });
    await h.thread.startTurn("go on");
    expect(h.events.filter((e) => e.type === "turn.completed").at(-1)).toMatchObject({ status: "completed" });
  });

  test(`the same tool call ${MAX_SAME_CALLS} times in a row ends the turn as repetition; the last one is answered unrun`, async () => {
    const seen: GenerateRequest[] = [];
    const script = (request: GenerateRequest): ScriptedReply => {
      seen.push(request);
      return lastUser(request) === "go on" && request.messages.at(-1)?.role === "user"
        ? { text: "ok" }
        : { toolCalls: [{ name: "list_dir", arguments: JSON.stringify({ path: "." }) }] };
    };
    await using h = await agentHarness({ "a.txt": "a" }, { script });
    await h.thread.startTurn("list");
    const done = completedTurn(h.events);
    expect(done).toMatchObject({ status: "failed", reason: "repetition" });
    expect(done.error?.message).toMatch(/the same list_dir call 5 times in a row/);
    expect(seen).toHaveLength(MAX_SAME_CALLS);
    const statuses = [...toolItems(h.events).values()];
    expect(statuses).toEqual([...Array(MAX_SAME_CALLS - 1).fill("completed"), "failed"]);
    await h.thread.startTurn("go on");
    expect(seen.at(-1)!.messages.at(-2)).toMatchObject({
      role: "tool",
      content: expect.stringMatching(
        /^Not run: the turn was stopped because the reply kept repeating itself/,
      ),
    });
  });

  test("round-cap tool items stay running forever: at the cap the last round's calls end failed, not running", async () => {
    let n = 0;
    const script = (): ScriptedReply => ({
      toolCalls: [
        { name: "list_dir", arguments: JSON.stringify({ path: `./${n++}` }) },
        { name: "read_file", arguments: JSON.stringify({ path: `${n}.txt` }) },
      ],
    });
    await using h = await agentHarness({ "a.txt": "a" }, { script }, { maxToolRounds: 2 });
    await h.thread.startTurn("list forever");
    expect(completedTurn(h.events)).toMatchObject({ status: "failed", reason: "max_tool_rounds" });
    const items = toolItems(h.events);
    expect(items.size).toBe(6);
    expect([...items.values()].filter((status) => status === "running")).toEqual([]);
    const unrun = h.events.flatMap((e) =>
      e.type === "item.completed" && e.item.type === "tool_call" && e.item.output?.startsWith("Not run")
        ? [e.item]
        : [],
    );
    expect(unrun).toHaveLength(2);
    expect(unrun.every((item) => item.status === "failed")).toBe(true);
  });
});
