import { describe, expect, test } from "vitest";
import { endOfJsonValue, OutputParser, type ParsedOutput } from "./output-parser.js";

const qwen = {
  prefix: '\n<tool_call>\n{"name": "',
  paramsPrefix: '", "arguments": ',
  suffix: "}\n</tool_call>",
};

/** Feeds the text in pieces of `size` characters, as a token stream would. */
function parse(text: string, size: number, triggers = ["<|im_end|>"]): ParsedOutput[] {
  const parser = new OutputParser(triggers, qwen);
  const out: ParsedOutput[] = [];
  for (let i = 0; i < text.length; i += size) out.push(...parser.push(text.slice(i, i + size)));
  out.push(...parser.finish());
  return merge(out);
}

/** Joins adjacent text pieces, since how text is split is not part of the contract. */
function merge(items: ParsedOutput[]): ParsedOutput[] {
  const out: ParsedOutput[] = [];
  for (const item of items) {
    const last = out.at(-1);
    if (item.type === "text" && last?.type === "text") last.text += item.text;
    else out.push({ ...item });
  }
  return out;
}

describe("OutputParser", () => {
  test.each([1, 2, 3, 7, 1000])(
    "splits text, a native tool call and the end of turn (pieces of %i)",
    (size) => {
      const text =
        'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a}.ts"}}\n</tool_call><|im_end|>ignored';
      expect(parse(text, size)).toEqual([
        { type: "text", text: "Let me look." },
        { type: "call", name: "read_file", arguments: '{"path": "a}.ts"}' },
        { type: "stop" },
      ]);
    },
  );

  test("holds back a possible stop trigger until it is known not to be one", () => {
    const parser = new OutputParser(["<|im_end|>"], null);
    expect(parser.push("a <|im")).toEqual([{ type: "text", text: "a " }]);
    expect(parser.push("possible")).toEqual([{ type: "text", text: "<|impossible" }]);
    expect(parser.push("<|im_end|>")).toEqual([{ type: "stop" }]);
    expect(parser.stopped).toBe(true);
  });

  test("two calls in a row", () => {
    const one = '<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>';
    const two = '\n<tool_call>\n{"name": "b", "arguments": {"x": [1, 2]}}\n</tool_call>';
    expect(parse(one + two, 5)).toEqual([
      { type: "call", name: "a", arguments: "{}" },
      { type: "call", name: "b", arguments: '{"x": [1, 2]}' },
    ]);
  });

  test("a malformed call is handed back as text", () => {
    const text = '<tool_call>\n{"name": "a", "arguments": {"x": 1}} oops';
    expect(parse(text, 4)).toEqual([
      { type: "text", text: '<tool_call>\n{"name": "a", "arguments": {"x": 1}} oops' },
    ]);
  });

  test("unfinished text at the end is flushed", () => {
    expect(parse("partial <|im", 3)).toEqual([{ type: "text", text: "partial <|im" }]);
  });
});

test("endOfJsonValue respects strings and escapes", () => {
  expect(endOfJsonValue('{"a": "}\\""} rest', 0)).toBe(12);
  expect(endOfJsonValue(" [1, [2]] x", 0)).toBe(9);
  expect(endOfJsonValue('{"open": 1', 0)).toBe(-1);
});
