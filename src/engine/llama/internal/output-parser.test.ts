import { describe, expect, test } from "vitest";
import type { ToolDefinition } from "../../../protocol/chat.js";
import { JsonValueEnd } from "./calls-parser.js";
import { OutputParser, type OutputParserOptions, type ParsedOutput } from "./output-parser.js";
import {
  type CallSyntax,
  GEMMA4_CALL_SYNTAX,
  HARMONY_CALL_SYNTAX,
  QWEN3_CODER_CALL_SYNTAX,
  SPARK_CALL_SYNTAX,
} from "./tool-call-syntax.js";

const hermes = SPARK_CALL_SYNTAX;

/** Feeds the text in pieces of `size` characters, as a token stream would. */
function parse(
  text: string,
  size: number,
  syntax: CallSyntax | null,
  triggers: string[] = [],
  options: OutputParserOptions = {},
): ParsedOutput[] {
  const parser = new OutputParser(triggers, syntax, options);
  const out: ParsedOutput[] = [];
  for (let i = 0; i < text.length; i += size) {
    let pieces = parser.push(text.slice(i, i + size));
    out.push(...pieces);
    // The engine goes on at once when it does not need to generate the call again.
    while (pieces.at(-1)?.type === "calls_begin") {
      pieces = parser.push("");
      out.push(...pieces);
    }
  }
  out.push(...parser.finish());
  return merge(out.filter((item) => item.type !== "calls_begin" && item.type !== "calls_end"));
}

/** Joins adjacent text and argument pieces, since how text is split is not part of the contract. */
function merge(items: ParsedOutput[]): ParsedOutput[] {
  const out: ParsedOutput[] = [];
  for (const item of items) {
    const last = out.at(-1);
    if ((item.type === "text" || item.type === "reasoning") && last?.type === item.type)
      last.text += item.text;
    else if (item.type === "call_delta" && last?.type === "call_delta") last.delta += item.delta;
    else out.push({ ...item });
  }
  return out;
}

/** The events of one streamed call. */
function call(name: string, args: string): ParsedOutput[] {
  return [
    { type: "call_start", name },
    { type: "call_delta", delta: args },
    { type: "call", name, arguments: args },
  ];
}

const SIZES = [1, 2, 3, 7, 1000];

describe("OutputParser", () => {
  test.each(SIZES)("splits text, a native tool call and the end of turn (pieces of %i)", (size) => {
    const text =
      'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a}.ts"}}\n</tool_call><|im_end|>ignored';
    expect(parse(text, size, hermes, ["<|im_end|>"])).toEqual([
      { type: "text", text: "Let me look." },
      ...call("read_file", '{"path": "a}.ts"}'),
      { type: "stop" },
    ]);
  });

  test("streams the arguments as they arrive, before the call is complete", () => {
    const parser = new OutputParser([], hermes);
    const pieces = parser.push('<tool_call>\n{"name": "apply_patch", "arguments": {"patch": "*** Begin');
    expect(pieces.at(-1)).toEqual({ type: "calls_begin", at: "<tool_call>".length });
    expect(parser.push("")).toEqual([
      { type: "call_start", name: "apply_patch" },
      { type: "call_delta", delta: '{"patch": "*** Begin' },
    ]);
    expect(parser.push(' Patch\\n"')).toEqual([{ type: "call_delta", delta: ' Patch\\n"' }]);
    expect(parser.push("}}\n</tool_call>")).toEqual([
      { type: "call_delta", delta: "}" },
      { type: "call", name: "apply_patch", arguments: '{"patch": "*** Begin Patch\\n"}' },
      { type: "calls_end" },
    ]);
  });

  test.each(SIZES)("other spacing and key order parse to the same call (pieces of %i)", (size) => {
    const spaced = '<tool_call>{ "name" :"list_dir",\n  "arguments":{"path":"src"} }</tool_call>';
    expect(parse(spaced, size, hermes)).toEqual(call("list_dir", '{"path":"src"}'));
    const reordered = '<tool_call>\n{"arguments": {"path": "src"}, "name": "list_dir"}\n</tool_call>';
    expect(parse(reordered, size, hermes)).toEqual(call("list_dir", '{"path":"src"}'));
    const parameters = '<tool_call>\n{"name": "list_dir", "parameters": {"path": "src"}}\n</tool_call>';
    expect(parse(parameters, size, hermes)).toEqual(call("list_dir", '{"path": "src"}'));
  });

  test("parallel calls with text around them", () => {
    const one = 'First.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>';
    const two = '\n<tool_call>\n{"name": "b", "arguments": {"x": [1, 2]}}\n</tool_call>\nDone.';
    expect(parse(one + two, 5, hermes)).toEqual([
      { type: "text", text: "First." },
      ...call("a", "{}"),
      ...call("b", '{"x": [1, 2]}'),
      { type: "text", text: "\nDone." },
    ]);
  });

  test("what does not fit the syntax is handed back as text", () => {
    const text = '<tool_call>\n{"name": "a", "arguments": {"x": 1}} oops';
    expect(parse(text, 4, hermes)).toEqual([
      { type: "call_start", name: "a" },
      { type: "call_delta", delta: '{"x": 1}' },
      { type: "call", name: "a", arguments: '{"x": 1}' },
      { type: "text", text: "} oops" },
    ]);
    expect(parse('<tool_call>\n"not a call"', 4, hermes)).toEqual([
      { type: "text", text: '<tool_call>\n"not a call"' },
    ]);
  });

  test.each(SIZES)(
    "regression: a call that stops fitting hands back only what it read, so a stop marker after it still stops (pieces of %i)",
    (size) => {
      const text = '<tool_call>\n"not a call" <|im_end|>ignored';
      expect(parse(text, size, hermes, ["<|im_end|>"])).toEqual([
        { type: "text", text: '<tool_call>\n"not a call" ' },
        { type: "stop" },
      ]);
    },
  );

  test.each(SIZES)(
    "regression: a JSON opening after an answer is text even when both arrive in one piece (pieces of %i)",
    (size) => {
      const llama3: CallSyntax = { ...hermes, trigger: '{"name": "', callOpen: '{"name": "', callClose: "" };
      const text = 'Here is JSON: {"name": "x", "arguments": {}}';
      expect(parse(text, size, llama3)).toEqual([{ type: "text", text }]);
    },
  );

  test("holds back a possible stop trigger until it is known not to be one", () => {
    const parser = new OutputParser(["<|im_end|>"], null);
    expect(parser.push("a <|im")).toEqual([{ type: "text", text: "a " }]);
    expect(parser.push("possible")).toEqual([{ type: "text", text: "<|impossible" }]);
    expect(parser.push("<|im_end|>")).toEqual([{ type: "stop" }]);
    expect(parser.stopped).toBe(true);
  });

  test.each(SIZES)(
    "regression: blank lines a reply opens with, and echoed </tool_response> framing, are not the answer (pieces of %i)",
    (size) => {
      // SmolLM2 after a forced list_dir answered `</tool_response>`; answers began with a blank line.
      expect(parse("</tool_response>\n\nThe folder has a.ts.", size, hermes)).toEqual([
        { type: "text", text: "The folder has a.ts." },
      ]);
      expect(parse("\n  \nHello.", size, hermes)).toEqual([{ type: "text", text: "Hello." }]);
      // A first line's indentation is kept; framing later in an answer is dropped in place.
      expect(parse("    x = 1\n</tool_response>done", size, hermes)).toEqual([
        { type: "text", text: "    x = 1\ndone" },
      ]);
      // Opening a tool response makes one up: the reply ends there.
      expect(parse("Done.\n<tool_response>\n{fake}", size, hermes)).toEqual([
        { type: "text", text: "Done.\n" },
        { type: "stop" },
      ]);
    },
  );

  test("unfinished text at the end is flushed", () => {
    expect(parse("partial <|im", 3, null, ["<|im_end|>"])).toEqual([{ type: "text", text: "partial <|im" }]);
  });

  test.each(SIZES)("reasoning is reasoning, never the answer (pieces of %i)", (size) => {
    const qwen3 = { ...hermes, reasoning: { open: "<think>", close: "</think>" } };
    const text =
      '<think>\nThe user wants a file.\n</think>\n\nSure.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>';
    expect(parse(text, size, qwen3)).toEqual([
      { type: "reasoning", text: "\nThe user wants a file.\n" },
      { type: "text", text: "Sure." },
      ...call("a", "{}"),
    ]);
  });
});

describe("call syntaxes of other families", () => {
  const mistral: CallSyntax = {
    family: "Mistral",
    trigger: "[TOOL_CALLS]",
    sectionOpen: "[TOOL_CALLS][",
    callOpen: '{"name": "',
    nameEnd: '", "arguments": ',
    callClose: "}",
    between: ", ",
    sectionClose: "]",
    jsonObject: true,
  };
  const llama31: CallSyntax = {
    family: "Llama 3.1",
    trigger: "<function=",
    sectionOpen: "",
    callOpen: "<function=",
    nameEnd: ">",
    callClose: "</function>",
    between: "",
    sectionClose: "",
    jsonObject: false,
  };
  const devstral: CallSyntax = {
    family: "Devstral",
    trigger: "[TOOL_CALLS]",
    sectionOpen: "",
    callOpen: "[TOOL_CALLS]",
    nameEnd: "[ARGS]",
    callClose: "",
    between: "",
    sectionClose: "",
    jsonObject: false,
  };
  const deepseek: CallSyntax = {
    family: "deepseek-v3.1",
    trigger: "<｜tool▁calls▁begin｜>",
    sectionOpen: "<｜tool▁calls▁begin｜>",
    callOpen: "<｜tool▁call▁begin｜>",
    nameEnd: "<｜tool▁sep｜>",
    callClose: "<｜tool▁call▁end｜>",
    between: "",
    sectionClose: "<｜tool▁calls▁end｜>",
    jsonObject: false,
  };

  test.each(SIZES)("Mistral: a section of parallel calls, in any key order (pieces of %i)", (size) => {
    const text = 'Looking.[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"arguments": {}, "name": "b"}]';
    expect(parse(text, size, mistral)).toEqual([
      { type: "text", text: "Looking." },
      ...call("a", '{"x": 1}'),
      ...call("b", "{}"),
    ]);
  });

  test("Mistral: a reply that is a JSON document is not a call", () => {
    const text = '{"name": "spark", "version": "1.0.0"}';
    expect(parse(text, 3, mistral)).toEqual([{ type: "text", text }]);
  });

  test.each(SIZES)("Llama 3.1: calls end before the end-of-message token (pieces of %i)", (size) => {
    const text = '<function=read_file>{"path": "a.ts"}</function>';
    expect(parse(text, size, llama31)).toEqual(call("read_file", '{"path": "a.ts"}'));
  });

  test.each(SIZES)("Devstral: each call has its own marker (pieces of %i)", (size) => {
    const text = '[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{}';
    expect(parse(text, size, devstral)).toEqual([...call("a", '{"x": 1}'), ...call("b", "{}")]);
  });

  test.each(SIZES)("DeepSeek V3.1: a section of calls (pieces of %i)", (size) => {
    const text =
      'Ok.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>a<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁call▁begin｜>b<｜tool▁sep｜>{"y": true}<｜tool▁call▁end｜><｜tool▁calls▁end｜>';
    expect(parse(text, size, deepseek)).toEqual([
      { type: "text", text: "Ok." },
      ...call("a", "{}"),
      ...call("b", '{"y": true}'),
    ]);
  });
});

test("JsonValueEnd finds a value's end across pieces, respecting strings and escapes", () => {
  const end = (...pieces: string[]) => {
    const value = new JsonValueEnd();
    let read: number | null = -1;
    for (const piece of pieces) {
      read = value.read(piece);
      if (read !== -1) break;
    }
    return read;
  };
  expect(end('{"a": "}\\""} rest')).toBe(12);
  expect(end('{"a": "}\\', '"', '"} rest')).toBe(2);
  expect(end(" [1, [2]] x")).toBe(9);
  expect(end('{"open": 1')).toBe(-1);
  expect(end('"a b', ' c" ,')).toBe(3);
  expect(end("12", "3", "}")).toBe(0);
  expect(end(" ", "}")).toBe(null);
});

describe("argument syntaxes other than JSON, and message framing", () => {
  const tools: ToolDefinition[] = [
    {
      name: "apply_patch",
      description: "Applies a patch.",
      parameters: {
        type: "object",
        properties: {
          patch: { type: "string" },
          dry_run: { type: "boolean" },
          context: { type: ["integer", "string"] },
          paths: { type: "array", items: { type: "string" } },
        },
        required: ["patch"],
      },
    },
  ];
  const options = { tools };

  test.each(SIZES)(
    "Qwen3-Coder: XML parameters become JSON arguments, typed by the schema (pieces of %i)",
    (size) => {
      const text =
        'Patching.\n<tool_call>\n<function=apply_patch>\n<parameter=patch>\n*** Begin Patch\n"quoted" 12\n</parameter>\n<parameter=dry_run>\nfalse\n</parameter>\n<parameter=context>\n3\n</parameter>\n<parameter=paths>\n["a.ts", "b.ts"]\n</parameter>\n</function>\n</tool_call>';
      const args =
        '{"patch": "*** Begin Patch\\n\\"quoted\\" 12", "dry_run": false, "context": 3, "paths": ["a.ts","b.ts"]}';
      expect(parse(text, size, QWEN3_CODER_CALL_SYNTAX, [], options)).toEqual([
        { type: "text", text: "Patching." },
        ...call("apply_patch", args),
      ]);
      expect(JSON.parse(args)).toEqual({
        patch: '*** Begin Patch\n"quoted" 12',
        dry_run: false,
        context: 3,
        paths: ["a.ts", "b.ts"],
      });
    },
  );

  test("Qwen3-Coder: a string parameter that reads as JSON stays a string; other spacing and parallel calls", () => {
    const one =
      "<tool_call><function=apply_patch><parameter=patch>123</parameter><parameter=context>\nnear the top\n</parameter></function></tool_call>";
    const two =
      '\n<tool_call>\n<function=apply_patch>\n<parameter=patch>\n{"a": 1}\n</parameter>\n</function>\n</tool_call>';
    expect(parse(one + two, 3, QWEN3_CODER_CALL_SYNTAX, [], options)).toEqual([
      ...call("apply_patch", '{"patch": "123", "context": "near the top"}'),
      ...call("apply_patch", '{"patch": "{\\"a\\": 1}"}'),
    ]);
  });

  test("Qwen3-Coder: a string parameter streams as it is written, the closing tag held back", () => {
    const parser = new OutputParser([], QWEN3_CODER_CALL_SYNTAX, options);
    expect(
      parser.push("<tool_call>\n<function=apply_patch>\n<parameter=patch>\n*** Begin").at(-1)?.type,
    ).toBe("calls_begin");
    expect(parser.push("")).toEqual([
      { type: "call_start", name: "apply_patch" },
      { type: "call_delta", delta: '{"patch": "*** Begin' },
    ]);
    expect(parser.push(" Patch\n</par")).toEqual([{ type: "call_delta", delta: " Patch" }]);
    expect(parser.push("ameter>\n</function>\n</tool_call>")).toEqual([
      { type: "call_delta", delta: '"}' },
      { type: "call", name: "apply_patch", arguments: '{"patch": "*** Begin Patch"}' },
      { type: "calls_end" },
    ]);
  });

  test("regression: a surrogate pair split between two tokens of a string argument streams as one character", () => {
    const pieces = [
      "<tool_call>\n<function=apply_patch>\n<parameter=patch>\nsmile \ud83d",
      "\ude00\n</parameter>\n",
    ];
    const qwen = new OutputParser([], QWEN3_CODER_CALL_SYNTAX, options);
    const gemma = new OutputParser([], GEMMA4_CALL_SYNTAX, options);
    const gemmaPieces = ['<|tool_call>call:apply_patch{patch:<|"|>smile \ud83d', '\ude00<|"|>'];
    for (const [parser, input] of [
      [qwen, pieces],
      [gemma, gemmaPieces],
    ] as const) {
      const deltas = input
        .flatMap((piece) => [...parser.push(piece), ...parser.push("")])
        .flatMap((item) => (item.type === "call_delta" ? [item.delta] : []));
      expect(deltas.join("")).toBe('{"patch": "smile 😀"');
    }
  });

  test("Qwen3-Coder: what is not a parameter list is handed back as text", () => {
    const text = "<tool_call>\n<function=apply_patch>\nnot a parameter";
    expect(parse(text, 5, QWEN3_CODER_CALL_SYNTAX, [], options)).toEqual([
      { type: "call_start", name: "apply_patch" },
      { type: "call_delta", delta: "{" },
      { type: "text", text },
    ]);
  });

  test.each(SIZES)(
    "Gemma 4: its values become JSON arguments; reasoning is reasoning (pieces of %i)",
    (size) => {
      const text =
        '<|channel>thought\nA patch.<channel|>Ok.<|tool_call>call:apply_patch{context:3,dry_run:true,paths:[<|"|>a.ts<|"|>,<|"|>b, c<|"|>],patch:<|"|>*** Begin Patch\n{x: "y"}<|"|>,opts:{deep:{n:null}},empty:[]}<tool_call|><|tool_call>call:apply_patch{}<tool_call|><|tool_response>';
      const args =
        '{"context": 3, "dry_run": true, "paths": ["a.ts", "b, c"], "patch": "*** Begin Patch\\n{x: \\"y\\"}", "opts": {"deep": {"n": null}}, "empty": []}';
      expect(parse(text, size, GEMMA4_CALL_SYNTAX, [], options)).toEqual([
        { type: "reasoning", text: "\nA patch." },
        { type: "text", text: "Ok." },
        ...call("apply_patch", args),
        ...call("apply_patch", "{}"),
        { type: "stop" },
      ]);
      expect(JSON.parse(args).patch).toBe('*** Begin Patch\n{x: "y"}');
    },
  );

  test("Gemma 4: a string streams as it is written", () => {
    const parser = new OutputParser([], GEMMA4_CALL_SYNTAX, options);
    parser.push('<|tool_call>call:apply_patch{patch:<|"|>*** Begin');
    expect(parser.push("")).toEqual([
      { type: "call_start", name: "apply_patch" },
      { type: "call_delta", delta: '{"patch": "*** Begin' },
    ]);
    expect(parser.push(' Patch<|"')).toEqual([{ type: "call_delta", delta: " Patch" }]);
    expect(parser.push("|>}<tool_call|>")).toEqual([
      { type: "call_delta", delta: '"}' },
      { type: "call", name: "apply_patch", arguments: '{"patch": "*** Begin Patch"}' },
      { type: "calls_end" },
    ]);
  });

  test.each(SIZES)(
    "Harmony: channels never reach the answer; calls in either header (pieces of %i)",
    (size) => {
      const inChannel =
        '<|channel|>analysis<|message|>Need a patch.<|end|><|start|>assistant<|channel|>commentary to=functions.apply_patch <|constrain|>json<|message|>{"patch": "x"}<|call|>';
      expect(parse(inChannel, size, HARMONY_CALL_SYNTAX, [], options)).toEqual([
        { type: "reasoning", text: "Need a patch." },
        ...call("apply_patch", '{"patch": "x"}'),
      ]);
      const inRole =
        "<|channel|>commentary<|message|>Patching now.<|end|><|start|>assistant to=functions.apply_patch<|channel|>commentary json<|message|>{}<|call|>";
      expect(parse(inRole, size, HARMONY_CALL_SYNTAX, [], options)).toEqual([
        { type: "text", text: "Patching now." },
        ...call("apply_patch", "{}"),
      ]);
      const answer =
        "<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>The answer.<|return|>";
      expect(parse(answer, size, HARMONY_CALL_SYNTAX, ["<|return|>"], options)).toEqual([
        { type: "reasoning", text: "Easy." },
        { type: "text", text: "The answer." },
        { type: "stop" },
      ]);
    },
  );

  test("Harmony without tools: reasoning is still reasoning, and a call header is not a call", () => {
    const answer = "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>final<|message|>Hi.";
    expect(parse(answer, 4, HARMONY_CALL_SYNTAX, [], { calls: false })).toEqual([
      { type: "reasoning", text: "Hm." },
      { type: "text", text: "Hi." },
    ]);
  });
});
