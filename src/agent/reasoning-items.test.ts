import { describe, expect, test } from "vitest";
import type { ThreadEvent, ThreadItem } from "../protocol/agent.js";
import { historyFromItems } from "./conversation-history.js";
import { agentHarness } from "./test-support/agent-harness.js";
import { recorded } from "./test-support/scripted-replies.js";

/**
 * The item events of a run, as `type item-type`, and the text of consecutive deltas joined (how
 * many deltas carry it depends on how the stream was coalesced).
 */
function narration(events: ThreadEvent[]): string[] {
  const lines: string[] = [];
  for (const event of events) {
    if (event.type === "item.started" || event.type === "item.completed")
      lines.push(`${event.type} ${event.item.type}`);
    else if (event.type === "item.delta") {
      const last = lines.at(-1);
      if (last?.startsWith("delta ")) lines[lines.length - 1] = last + event.delta;
      else lines.push(`delta ${event.delta}`);
    }
  }
  return lines;
}

describe("reasoning items (scripted model, real server and client)", () => {
  test("the model's reasoning streams as a reasoning item, ended before the answer's message starts", async () => {
    const model = recorded([{ reasoning: "Two plus two.", text: "It is four." }]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    await h.thread.startTurn("what is 2+2?");
    expect(narration(h.events)).toEqual([
      "item.started user_message",
      "item.completed user_message",
      "item.started reasoning",
      "delta Two plus two.",
      "item.completed reasoning",
      "item.started agent_message",
      "delta It is four.",
      "item.completed agent_message",
    ]);
    const completed = h.events.flatMap((e) => (e.type === "item.completed" ? [e.item] : []));
    expect(completed[1]).toMatchObject({ type: "reasoning", text: "Two plus two." });
    expect(completed[2]).toMatchObject({ type: "agent_message", text: "It is four." });
    expect(completed[1]!.id).not.toBe(completed[2]!.id);
  });

  test("reasoning before a tool call is its own item; the next response's reasoning is another", async () => {
    const model = recorded([
      { reasoning: "List it.", toolCalls: [{ name: "list_dir", arguments: JSON.stringify({ path: "." }) }] },
      { reasoning: "One file.", text: "There is a.txt." },
    ]);
    await using h = await agentHarness({ "a.txt": "a" }, { script: model.script });
    await h.thread.startTurn("what is here?");
    const completed = h.events.flatMap((e) => (e.type === "item.completed" ? [e.item] : []));
    expect(completed.map((item) => item.type)).toEqual([
      "user_message",
      "reasoning",
      "tool_call",
      "reasoning",
      "agent_message",
    ]);
    expect(
      completed.filter((item) => item.type === "reasoning").map((item) => (item as { text: string }).text),
    ).toEqual(["List it.", "One file."]);
  });

  test("a conversation resent whole (resume, compaction) leaves earlier reasoning out", () => {
    const items: ThreadItem[] = [
      { type: "user_message", id: "u1", text: "hi" },
      { type: "reasoning", id: "r1", text: "A greeting." },
      { type: "agent_message", id: "a1", text: "Hello." },
    ];
    expect(historyFromItems(items)).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: "Hello." },
    ]);
  });
});
