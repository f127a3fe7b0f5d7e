import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ToolDefinition } from "../../protocol/chat.js";
import type { EngineEvent } from "../engine.js";
import { tinyModelWithTemplate } from "../test-support/chat-templates.js";
import { collect } from "../test-support/engine-conformance.js";
import { OutputParser, type ParsedOutput } from "./internal/output-parser.js";
import { CALL_FAMILIES } from "./internal/test-support/call-families.js";
import { LlamaEngine } from "./llama-engine.js";

/**
 * Tool calls in each common chat template family, read from llama.cpp's real templates: the call
 * syntax Spark derives, model-shaped outputs (spacing, key order, parallel calls, reasoning, text
 * around) parsed to calls, and a random-weight model forced to call (`tool_choice: "required"` or a
 * named tool) producing a call that parses and matches the tool's schema: the grammar does it.
 */
interface Family {
  template: string;
  trigger: string;
  /** The entry of `CALL_FAMILIES` (the split property test's families) with this syntax. */
  family: string;
  /** Model-shaped outputs, each with the calls it holds. */
  shaped: {
    output: string;
    calls: { name: string; arguments: unknown }[];
    text?: string;
    reasoning?: string;
  }[];
  contextSize?: number;
}

const FAMILIES: Family[] = [
  {
    template: "Qwen-Qwen2.5-7B-Instruct.jinja",
    family: "hermes",
    trigger: "<tool_call>",
    shaped: [
      {
        output:
          'Looking.\n<tool_call>\n{"name": "pick", "arguments": {"mode": "fast", "count": 2, "flag": true}}\n</tool_call>\n<tool_call>\n{"arguments": {}, "name": "other"}\n</tool_call>',
        calls: [
          { name: "pick", arguments: { mode: "fast", count: 2, flag: true } },
          { name: "other", arguments: {} },
        ],
        text: "Looking.",
      },
    ],
  },
  {
    template: "Qwen-Qwen3-0.6B.jinja",
    family: "qwen3",
    trigger: "<tool_call>",
    shaped: [
      {
        output:
          '<think>\nThe user wants one.\n</think>\n\n<tool_call>\n{ "name":"other","arguments":{} }\n</tool_call>',
        calls: [{ name: "other", arguments: {} }],
        reasoning: "\nThe user wants one.\n",
      },
    ],
  },
  {
    // XML parameters: strings raw, other values as JSON, typed by the tool's schema.
    template: "Qwen3-Coder.jinja",
    family: "qwen3-coder",
    trigger: "<tool_call>",
    shaped: [
      {
        output:
          "Picking.\n<tool_call>\n<function=pick>\n<parameter=mode>\nfast\n</parameter>\n<parameter=count>\n2\n</parameter>\n<parameter=flag>\ntrue\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=other>\n</function>\n</tool_call>",
        calls: [
          { name: "pick", arguments: { mode: "fast", count: 2, flag: true } },
          { name: "other", arguments: {} },
        ],
        text: "Picking.",
      },
      {
        output:
          "<tool_call><function=pick><parameter=flag>false</parameter> <parameter=mode>slow</parameter><parameter=count> 0 </parameter></function></tool_call>",
        calls: [{ name: "pick", arguments: { flag: false, mode: "slow", count: 0 } }],
      },
    ],
  },
  {
    template: "meta-llama-Llama-3.1-8B-Instruct.jinja",
    family: "llama-3.1",
    trigger: '{"name": "',
    shaped: [
      {
        output: '{"name": "pick", "parameters": {"mode": "slow", "count": 0, "flag": false}}',
        calls: [{ name: "pick", arguments: { mode: "slow", count: 0, flag: false } }],
      },
      {
        output: 'Here is JSON: {"name": "x", "parameters": {}}',
        calls: [],
        text: 'Here is JSON: {"name": "x", "parameters": {}}',
      },
    ],
  },
  {
    template: "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    family: "mistral-nemo",
    trigger: "[TOOL_CALLS]",
    shaped: [
      {
        output:
          '[TOOL_CALLS][{"name": "other", "arguments": {}}, {"arguments": {"mode": "fast", "count": 1, "flag": true}, "name": "pick"}]',
        calls: [
          { name: "other", arguments: {} },
          { name: "pick", arguments: { mode: "fast", count: 1, flag: true } },
        ],
      },
      {
        output: '{"name": "spark", "version": "1.0.0"}',
        calls: [],
        text: '{"name": "spark", "version": "1.0.0"}',
      },
    ],
  },
  {
    template: "unsloth-mistral-Devstral-Small-2507.jinja",
    family: "devstral",
    trigger: "[TOOL_CALLS]",
    contextSize: 8192,
    shaped: [
      {
        output: 'Sure.[TOOL_CALLS]other[ARGS]{}[TOOL_CALLS]pick[ARGS]{"mode":"fast","count":3,"flag":false}',
        calls: [
          { name: "other", arguments: {} },
          { name: "pick", arguments: { mode: "fast", count: 3, flag: false } },
        ],
        text: "Sure.",
      },
    ],
  },
  {
    // No tool support in the template: Spark's own documented syntax.
    template: "google-gemma-2-2b-it.jinja",
    family: "spark",
    trigger: "<tool_call>",
    shaped: [
      {
        output: '<tool_call>\n{"name": "other", "arguments": {}}\n</tool_call>',
        calls: [{ name: "other", arguments: {} }],
      },
    ],
  },
  {
    // Gemma 4's own values: bare sorted keys, strings between <|"|> marks.
    template: "google-gemma-4-31B-it.jinja",
    family: "gemma-4",
    trigger: "<|tool_call>",
    shaped: [
      {
        output:
          '<|channel>thought\nPick one.<channel|><|tool_call>call:pick{count:2,flag:true,mode:<|"|>fast<|"|>}<tool_call|><|tool_call>call:other{}<tool_call|>',
        calls: [
          { name: "pick", arguments: { mode: "fast", count: 2, flag: true } },
          { name: "other", arguments: {} },
        ],
        reasoning: "\nPick one.",
      },
      {
        output: 'Sure. <|tool_call>call:pick{ mode: <|"|>slow<|"|>, count: 0, flag: false }<tool_call|>',
        calls: [{ name: "pick", arguments: { mode: "slow", count: 0, flag: false } }],
        text: "Sure.",
      },
    ],
  },
  {
    template: "deepseek-ai-DeepSeek-V3.1.jinja",
    family: "deepseek-v3.1",
    trigger: "<｜tool▁calls▁begin｜>",
    shaped: [
      {
        output:
          '<think>hm</think>Ok.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>other<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁call▁begin｜>pick<｜tool▁sep｜>{"mode": "slow", "count": 7, "flag": true}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
        calls: [
          { name: "other", arguments: {} },
          { name: "pick", arguments: { mode: "slow", count: 7, flag: true } },
        ],
        text: "Ok.",
        reasoning: "hm",
      },
    ],
  },
  {
    template: "openai-gpt-oss-120b.jinja",
    family: "harmony",
    trigger: "to=functions.",
    shaped: [
      {
        output: ' to=functions.other<|constrain|>json<|message|>{"a":1}<|call|>',
        calls: [{ name: "other", arguments: { a: 1 } }],
      },
      {
        // Channels are never the answer: analysis is reasoning, a commentary header is a call.
        output:
          '<|channel|>analysis<|message|>Pick fast.<|end|><|start|>assistant<|channel|>commentary to=functions.pick <|constrain|>json<|message|>{"mode": "fast", "count": 1, "flag": true}<|call|>',
        calls: [{ name: "pick", arguments: { mode: "fast", count: 1, flag: true } }],
        reasoning: "Pick fast.",
      },
      {
        // The recipient in the role header, as the template renders calls; a preamble is shown.
        output:
          "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant to=functions.other<|channel|>commentary json<|message|>{}<|call|>",
        calls: [{ name: "other", arguments: {} }],
        text: "Checking.",
      },
      {
        output:
          "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Done.",
        calls: [],
        text: "Done.",
        reasoning: "Easy.",
      },
    ],
  },
];

const TOOLS: ToolDefinition[] = [
  {
    name: "pick",
    description: "Picks a mode.",
    parameters: {
      type: "object",
      properties: {
        mode: { type: "string", enum: ["fast", "slow"] },
        count: { type: "integer" },
        flag: { type: "boolean" },
      },
      required: ["mode", "count", "flag"],
      additionalProperties: false,
    },
  },
  { name: "other", description: "Does the other thing.", parameters: { type: "object", properties: {} } },
];

/** Checks a call's arguments against the test tools' schemas. */
function expectValid(name: string, args: string): void {
  const parsed = JSON.parse(args) as Record<string, unknown>;
  if (name === "other") {
    expect(parsed).toEqual({});
    return;
  }
  expect(name).toBe("pick");
  expect(Object.keys(parsed).sort()).toEqual(["count", "flag", "mode"]);
  expect(["fast", "slow"]).toContain(parsed.mode);
  expect(Number.isInteger(parsed.count)).toBe(true);
  expect(typeof parsed.flag).toBe("boolean");
}

function parseAll(parser: OutputParser, text: string): ParsedOutput[] {
  const out: ParsedOutput[] = [];
  for (const ch of text) {
    let pieces = parser.push(ch);
    out.push(...pieces);
    while (pieces.at(-1)?.type === "calls_begin") {
      pieces = parser.push("");
      out.push(...pieces);
    }
  }
  out.push(...parser.finish());
  return out;
}

function streamedCalls(events: EngineEvent[]) {
  const streamed = new Map<string, string>();
  for (const event of events) {
    if (event.type === "tool_call_start") streamed.set(event.callId, "");
    if (event.type === "tool_call_delta")
      streamed.set(event.callId, `${streamed.get(event.callId)}${event.delta}`);
  }
  return streamed;
}

describe.each(FAMILIES)("tool calls with $template", (family) => {
  let engine: LlamaEngine;
  beforeAll(async () => {
    engine = await LlamaEngine.create({
      modelPath: await tinyModelWithTemplate(family.template),
      contextSize: family.contextSize ?? 2048,
    });
  });
  afterAll(async () => {
    await engine?.dispose();
  });

  test("the call syntax starts at the family's marker, as the split property test writes it", () => {
    expect(engine.callSyntax.trigger).toBe(family.trigger);
    const tested = CALL_FAMILIES.find((entry) => entry.name === family.family)!.syntax;
    expect({ ...engine.callSyntax, family: "" }).toEqual({ ...tested, family: "" });
  });

  test("model-shaped outputs parse to the same calls", () => {
    for (const shaped of family.shaped) {
      const out = parseAll(new OutputParser([], engine.callSyntax, { tools: TOOLS }), shaped.output);
      const calls = out.flatMap((piece) =>
        piece.type === "call" ? [{ name: piece.name, arguments: JSON.parse(piece.arguments) }] : [],
      );
      expect(calls).toEqual(shaped.calls);
      const text = out.map((piece) => (piece.type === "text" ? piece.text : "")).join("");
      expect(text.trim()).toBe(shaped.text ?? "");
      const reasoning = out.map((piece) => (piece.type === "reasoning" ? piece.text : "")).join("");
      expect(reasoning).toBe(shaped.reasoning ?? "");
    }
  });

  test("a required call from a random-weight model parses and matches the schema", async () => {
    const { events, result } = await collect(engine, {
      messages: [{ role: "user", content: "Pick one." }],
      tools: TOOLS,
      toolChoice: "required",
      maxOutputTokens: 256,
    });
    const calls = events.flatMap((event) => (event.type === "tool_call" ? [event.call] : []));
    expect(calls.length).toBeGreaterThan(0);
    const streamed = streamedCalls(events);
    for (const call of calls) {
      expectValid(call.name, call.arguments);
      expect(streamed.get(call.callId)).toBe(call.arguments);
    }
    expect(result.stopReason === "tool_calls" || result.stopReason === "length").toBe(true);
  });

  test("a named tool is the one called", async () => {
    const { events } = await collect(engine, {
      messages: [{ role: "user", content: "Pick one." }],
      tools: TOOLS,
      toolChoice: { name: "pick" },
      maxOutputTokens: 256,
    });
    const first = events.find((event) => event.type === "tool_call");
    expect(first?.type === "tool_call" && first.call.name).toBe("pick");
    if (first?.type === "tool_call") expectValid("pick", first.call.arguments);
  });
});
