import { expect, test } from "vitest";
import type { EngineEvent } from "../engine.js";
import { expectWellFormedCalls } from "../test-support/call-stream.js";
import { collect, describeEngineConformance } from "../test-support/engine-conformance.js";
import { ScriptedEngine, scriptedTokens } from "./scripted-engine.js";

const story = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");

describeEngineConformance("scripted", async () => new ScriptedEngine({ script: () => ({ text: story }) }));

test("scripted tokens are words with their leading white space", () => {
  expect(scriptedTokens("fn main() {\n  x }")).toEqual(["fn", " main()", " {", "\n  x", " }"]);
});

test("a scripted reply can end in tool calls", async () => {
  const engine = new ScriptedEngine({
    script: [{ text: "Reading.", toolCalls: [{ name: "read", arguments: '{"p":1}' }] }],
  });
  const { events, result } = await collect(engine, { messages: [{ role: "user", content: "x" }] });
  expect(events.find((e) => e.type === "tool_call")).toMatchObject({
    call: { name: "read", arguments: '{"p":1}' },
  });
  expect(result.stopReason).toBe("tool_calls");
});

test("a scripted call streams: its start, one delta per argument token, then the whole call", async () => {
  const args = JSON.stringify({
    patch: "*** Begin Patch\n*** Add File: a.txt\n+one two three\n*** End Patch",
  });
  const engine = new ScriptedEngine({
    script: [{ text: "Editing.", toolCalls: [{ name: "apply_patch", arguments: args }] }],
  });
  const { events, text, result } = await collect(engine, { messages: [{ role: "user", content: "x" }] });
  expect(text).toBe("Editing.");
  const [streamed] = expectWellFormedCalls(events);
  expect(streamed?.call).toMatchObject({ name: "apply_patch", arguments: args });
  expect(streamed?.deltas).toEqual(scriptedTokens(args));
  expect(streamed?.deltas.length).toBeGreaterThan(3);
  const types = events.map((e) => e.type);
  expect(types.indexOf("tool_call_start")).toBeGreaterThan(types.lastIndexOf("text"));
  expect(result.stopReason).toBe("tool_calls");
});

test("a call cancelled while it streams ends without its tool_call", async () => {
  const args = JSON.stringify({ patch: story });
  const engine = new ScriptedEngine({ script: [{ toolCalls: [{ name: "apply_patch", arguments: args }] }] });
  const controller = new AbortController();
  const events: EngineEvent[] = [];
  for await (const event of engine.generate(
    { messages: [{ role: "user", content: "x" }] },
    { signal: controller.signal },
  )) {
    events.push(event);
    if (event.type === "tool_call_delta") controller.abort();
  }
  expectWellFormedCalls(events, { cancelled: true });
  expect(events.some((e) => e.type === "tool_call")).toBe(false);
  expect(events.filter((e) => e.type === "tool_call_delta")).toHaveLength(1);
  expect(events.at(-1)).toMatchObject({ type: "done", result: { stopReason: "cancelled" } });
});

test("reasoning streams before the answer, apart from it, and stays out of the conversation's state", async () => {
  const engine = new ScriptedEngine({ script: () => ({ reasoning: "Think it over.", text: "Yes." }) });
  const first = await collect(engine, { messages: [{ role: "user", content: "q" }], conversation: "c" });
  const reasoning = first.events.flatMap((e) => (e.type === "reasoning" ? [e.text] : [])).join("");
  expect(reasoning).toBe("Think it over.");
  expect(first.text).toBe("Yes.");
  expect(first.events.findLastIndex((e) => e.type === "reasoning")).toBeLessThan(
    first.events.findIndex((e) => e.type === "text"),
  );
  // The next turn renders the answer without the reasoning, as chat templates do: all of it cached.
  const second = await collect(engine, {
    messages: [
      { role: "user", content: "q" },
      { role: "assistant", content: "Yes." },
      { role: "user", content: "more" },
    ],
    conversation: "c",
  });
  expect(second.result.usage.cachedInputTokens).toBe(second.result.usage.inputTokens - 2);
});
