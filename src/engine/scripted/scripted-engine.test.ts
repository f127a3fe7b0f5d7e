import { expect, test } from "vitest";
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
