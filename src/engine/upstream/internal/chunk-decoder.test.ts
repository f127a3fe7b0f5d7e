import { expect, test } from "vitest";
import type { EngineEvent } from "../../engine.js";
import { expectWellFormedCalls } from "../../test-support/call-stream.js";
import type { ChatCompletionChunk } from "./chat-wire.js";
import { ChunkDecoder } from "./chunk-decoder.js";

type Delta = NonNullable<NonNullable<ChatCompletionChunk["choices"]>[number]["delta"]>;

const chunk = (delta: Delta, finish: string | null = null): ChatCompletionChunk => ({
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const args = (index: number, text: string, extra: { id?: string; name?: string } = {}): ChatCompletionChunk =>
  chunk({
    tool_calls: [
      {
        index,
        ...(extra.id ? { id: extra.id } : {}),
        function: { ...(extra.name ? { name: extra.name } : {}), arguments: text },
      },
    ],
  });

function decode(chunks: ChatCompletionChunk[], discardOutput = false): EngineEvent[] {
  const decoder = new ChunkDecoder(performance.now(), discardOutput);
  return [...chunks.flatMap((c) => decoder.push(c)), ...decoder.flush()];
}

test("parallel calls interleaved by index stream under their own ids and finish whole", () => {
  const events = decode([
    args(0, "", { id: "call_a", name: "read_file" }),
    args(0, '{"path":'),
    args(1, '{"path":"b"}', { id: "call_b", name: "list_dir" }),
    args(0, '"a"}'),
    chunk({}, "tool_calls"),
  ]);
  const calls = expectWellFormedCalls(events);
  expect(calls.map(({ call }) => call)).toEqual([
    { callId: "call_a", name: "read_file", arguments: '{"path":"a"}' },
    { callId: "call_b", name: "list_dir", arguments: '{"path":"b"}' },
  ]);
  expect(calls[0]?.deltas).toEqual(['{"path":', '"a"}']);
});

test("arguments that arrive before the name are held and sent at the start; a missing id is made up", () => {
  const events = decode([args(0, '{"q":'), args(0, '"x"}', { name: "search" }), chunk({}, "tool_calls")]);
  expect(events.slice(0, 2)).toEqual([
    { type: "tool_call_start", callId: "call_0", name: "search" },
    { type: "tool_call_delta", callId: "call_0", delta: '{"q":"x"}' },
  ]);
  expect(expectWellFormedCalls(events).map(({ call }) => call)).toEqual([
    { callId: "call_0", name: "search", arguments: '{"q":"x"}' },
  ]);
});

test("reasoning_content is reasoning, content is text", () => {
  const events = decode([chunk({ reasoning_content: "Let me see." }), chunk({ content: "Yes." }, "stop")]);
  expect(events.filter((e) => e.type !== "done")).toEqual([
    { type: "reasoning", text: "Let me see." },
    { type: "text", text: "Yes." },
  ]);
});

test("a pre-warm discards everything, calls included", () => {
  const events = decode([args(0, "{}", { id: "c", name: "f" }), chunk({ content: "x" }, "tool_calls")], true);
  expect(events).toEqual([]);
});
