import { getLlama, type Llama, LlamaGrammar } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ToolDefinition } from "../../../protocol/chat.js";
import { callGrammar } from "./call-grammar.js";
import { GbnfRules, textUntilRule } from "./json-schema-grammar.js";
import {
  GEMMA4_CALL_SYNTAX,
  HARMONY_CALL_SYNTAX,
  QWEN3_CODER_CALL_SYNTAX,
  SPARK_CALL_SYNTAX,
} from "./tool-call-syntax.js";

const PATCH: ToolDefinition = {
  name: "apply_patch",
  description: "Applies a patch.",
  parameters: {
    type: "object",
    properties: {
      patch: { type: "string" },
      mode: { type: "string", enum: ["fast", "slow"] },
      context: { type: ["integer", "string"] },
      paths: { type: "array", items: { type: "string" } },
      options: { type: "object", properties: { deep: { type: "boolean" } }, additionalProperties: false },
      extra: {},
    },
    required: ["patch"],
    additionalProperties: false,
  },
};
const OPEN: ToolDefinition = {
  name: "anything",
  description: "Takes any arguments.",
  parameters: { type: "object", additionalProperties: true },
};

describe("call grammars in each argument syntax", () => {
  let llama: Llama;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: "never", maxThreads: 1 });
  });
  afterAll(async () => {
    await llama.dispose();
  });

  test.each([SPARK_CALL_SYNTAX, QWEN3_CODER_CALL_SYNTAX, GEMMA4_CALL_SYNTAX, HARMONY_CALL_SYNTAX])(
    "llama.cpp reads the $family grammar, lazy and forced",
    (syntax) => {
      for (const options of [{}, { withTrigger: true }, { lead: "ok", choice: { name: "apply_patch" } }]) {
        const grammar = callGrammar(syntax, [PATCH, OPEN], options);
        expect(() => new LlamaGrammar(llama, { grammar })).not.toThrow();
      }
    },
  );

  test("a malformed grammar is refused (so the check above means something)", () => {
    expect(() => new LlamaGrammar(llama, { grammar: 'root ::= "a" (' })).toThrow();
  });

  test("Qwen3-Coder: strings are free text up to the closing tag, other values JSON of their schema", () => {
    const grammar = callGrammar(QWEN3_CODER_CALL_SYNTAX, [PATCH], { withTrigger: true });
    expect(grammar).toContain(
      String.raw`root ::= "<tool_call>\n<function=" call-body "</function>\n</tool_call>"`,
    );
    expect(grammar).toContain(String.raw`"<parameter=patch>\n" xml-text "\n</parameter>\n"`);
    expect(grammar).toContain(
      String.raw`("<parameter=mode>\n" apply-patch-args-mode-enum "\n</parameter>\n")?`,
    );
    expect(grammar).toContain('apply-patch-args-mode-enum ::= "fast" | "slow"');
    // A value that may be a string is free text (llama.cpp's rule), one that may not is JSON.
    expect(grammar).toContain(String.raw`("<parameter=context>\n" xml-text "\n</parameter>\n")?`);
    expect(grammar).toMatch(/"<parameter=options>\\n" apply-patch-args-options "\\n<\/parameter>\\n"/);
  });

  test("Gemma 4: keys sorted as the template renders them, strings between its marks", () => {
    const grammar = callGrammar(GEMMA4_CALL_SYNTAX, [PATCH], { withTrigger: true });
    expect(grammar).toContain('root ::= "<|tool_call>call:" call-body "<tool_call|>"');
    const properties = /^apply-patch-args-tail0 ::= (.*)$/m.exec(grammar)![1]!;
    const keys = [...properties.matchAll(/"(\w+):"/g)].map((match) => match[1]);
    expect(keys).toEqual(["context", "extra", "mode", "options", "patch", "paths"]);
    expect(grammar).toContain(String.raw`gemma-string ::= "<|\"|>" gemma-text "<|\"|>"`);
    expect(grammar).toContain(
      String.raw`apply-patch-args-mode-enum ::= "<|\"|>fast<|\"|>" | "<|\"|>slow<|\"|>"`,
    );
  });
});

/** Runs the character automaton `textUntilRule` writes over `text`: whether the rule accepts it. */
function acceptsText(grammar: string, start: string, text: string): boolean {
  const rules = new Map(
    grammar
      .trim()
      .split("\n")
      .map((line) => line.split(" ::= ") as [string, string]),
  );
  let state = start;
  for (const ch of text) {
    const body = rules.get(state)!;
    const alternatives = [...body.matchAll(/\[(\^?)((?:\\x[0-9a-f]{2}|[a-zA-Z0-9])+)\] ([\w-]+)/g)];
    const next = alternatives.find(([, negated, chars]) => {
      const set = [...chars!.matchAll(/\\x([0-9a-f]{2})|([a-zA-Z0-9])/g)].map(
        ([, hex, plain]) => plain ?? String.fromCharCode(Number.parseInt(hex!, 16)),
      );
      return set.includes(ch) !== (negated === "^");
    });
    if (!next) return false;
    state = next[3]!;
  }
  return true;
}

test.each([
  ["a plain value", "x = 1", true],
  ["line breaks and tags that are not the closing one", "a\n</param>\n<parameter\n\n</parameterx", true],
  ["a partial closing tag at the end", "done\n</parameter", true],
  ["the closing tag", "a\n</parameter>b", false],
  ["the closing tag after a line break", "\n\n</parameter>", false],
])("text up to a closing tag: %s", (_name, text, accepted) => {
  const rules = new GbnfRules();
  textUntilRule(rules, "\n</parameter>", "until");
  expect(acceptsText(rules.toString(), "until", text)).toBe(accepted);
});

test.each([
  ["a string with marks that are not the quote", 'a <|"| b <| "|>', true],
  ["the quote", 'a<|"|>', false],
  ["the quote after a partial one", '<|<|"|>', false],
])("text up to Gemma's quote: %s", (_name, text, accepted) => {
  const rules = new GbnfRules();
  textUntilRule(rules, '<|"|>', "until");
  expect(acceptsText(rules.toString(), "until", text)).toBe(accepted);
});
