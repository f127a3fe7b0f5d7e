import fc from "fast-check";
import type { ToolDefinition } from "../../../../protocol/chat.js";
import { toGemmaText } from "../gemma-arguments.js";
import { OutputParser, type ParsedOutput } from "../output-parser.js";
import {
  type CallSyntax,
  GEMMA4_CALL_SYNTAX,
  HARMONY_CALL_SYNTAX,
  QWEN3_CODER_CALL_SYNTAX,
  SPARK_CALL_SYNTAX,
} from "../tool-call-syntax.js";

/**
 * Every tool-call family the engine parses, as `callSyntaxOf` derives it from llama.cpp's real
 * templates (`tool-call-families.test.ts` loads them), with a writer of model-shaped replies in
 * each one's syntax: for tests that feed the parser whole replies split every way.
 */

/** A call as the model means it. */
export interface ShapedCall {
  name: string;
  arguments: Record<string, unknown>;
  /** Keys in another order than `name` first (JSON-object calls only): the call is released whole. */
  reordered?: boolean;
  /** JSON written with line breaks and indentation rather than on one line. */
  spaced?: boolean;
}

/** A reply as the model means it: optional reasoning, text, calls, text after them. */
export interface ShapedReply {
  reasoning: string;
  before: string;
  calls: ShapedCall[];
  after: string;
}

export interface CallFamily {
  name: string;
  syntax: CallSyntax;
  stops: string[];
  /** The reply as the model writes it. */
  write(reply: ShapedReply): string;
  /** Arguments this family can write (its value syntax limits strings and keys). */
  arguments: fc.Arbitrary<Record<string, unknown>>;
  /** Text may come before the calls (not where the trigger is a bare JSON opening). */
  textBefore: boolean;
  /** Text after the calls is parsed (not where the calls end the turn). */
  textAfter: boolean;
  /** Keys may come in another order than `name` first. */
  reorders: boolean;
}

/** The tool the XML family's values are typed by (its other families take any JSON). */
export const PATCH_TOOL: ToolDefinition = {
  name: "apply_patch",
  description: "Applies a patch.",
  parameters: {
    type: "object",
    properties: {
      patch: { type: "string" },
      dry_run: { type: "boolean" },
      context: { type: "integer" },
      paths: { type: "array", items: { type: "string" } },
      options: { type: "object" },
    },
    required: ["patch"],
  },
};

/** Characters that make text and strings hard: escapes, quotes, brackets, markup, non-ASCII, an emoji. */
const HARD = [..."ab z\n\t.,:!?'\"\\/<>|{}[]=#-_0é—", "😀", "\u2028"];
const hardString = (maxLength: number) =>
  fc.oneof(
    fc.string({ unit: fc.constantFrom(...HARD), maxLength }),
    fc.string({ unit: "binary", maxLength: Math.min(maxLength, 8) }),
  );

/** Any JSON value, with hard strings, nested a few levels. */
const jsonValue = (key: fc.Arbitrary<string>, string: fc.Arbitrary<string>) =>
  fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      string,
      fc.integer({ min: -1e6, max: 1e6 }),
      fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e9, max: 1e9 }),
      fc.boolean(),
      fc.constant(null),
      fc.array(tie("value"), { maxLength: 3 }),
      fc.dictionary(key, tie("value"), { maxKeys: 3 }),
    ),
  })).value;

const jsonArguments = fc.dictionary(hardString(6), jsonValue(hardString(6), hardString(24)), {
  maxKeys: 4,
}) as fc.Arbitrary<Record<string, unknown>>;

const GEMMA_QUOTE = '<|"|>';
const gemmaKey = fc.stringMatching(/^[a-z_][a-z0-9_]{0,6}$/);
const gemmaString = hardString(24).filter((text) => !text.includes(GEMMA_QUOTE));
const gemmaArguments = fc.dictionary(gemmaKey, jsonValue(gemmaKey, gemmaString), {
  maxKeys: 4,
}) as fc.Arbitrary<Record<string, unknown>>;

const xmlString = hardString(40).filter((text) => !text.includes("</parameter>"));
const xmlArguments = fc.record(
  {
    patch: xmlString,
    dry_run: fc.boolean(),
    context: fc.integer({ min: -100, max: 1e6 }),
    paths: fc.array(xmlString, { maxLength: 3 }),
    options: fc.dictionary(hardString(6), jsonValue(hardString(6), hardString(12)), { maxKeys: 3 }),
  },
  { requiredKeys: ["patch"] },
) as fc.Arbitrary<Record<string, unknown>>;

function json(value: unknown, spaced = false): string {
  return spaced ? JSON.stringify(value, null, 1) : JSON.stringify(value);
}

/** A JSON-object call: `{"name": ..., "arguments": ...}`, or its keys the other way round. */
function jsonObjectCall(call: ShapedCall, argumentsKey: string): string {
  const args = json(call.arguments, call.spaced);
  return call.reordered
    ? `{"${argumentsKey}": ${args}, "name": ${json(call.name)}}`
    : `{"name": ${json(call.name)}, "${argumentsKey}": ${args}}`;
}

const hermesCalls = (calls: ShapedCall[]) =>
  calls.map((call) => `\n<tool_call>\n${jsonObjectCall(call, "arguments")}\n</tool_call>`).join("");

/** The reply text, then what follows it: white space before a call belongs to the call. */
const after = (text: string) => (text ? `\n${text}` : "");

const HERMES: Omit<CallFamily, "name" | "syntax" | "write"> = {
  stops: [],
  arguments: jsonArguments,
  textBefore: true,
  textAfter: true,
  reorders: true,
};

/**
 * Qwen2.5's syntax: Spark's own (for templates without one: SmolLM2, Gemma 2) without the
 * tool-result framing only Spark's rendering of results puts in the model's own turn.
 */
const { stops: _sparkStops, framing: _sparkFraming, ...HERMES_SYNTAX } = SPARK_CALL_SYNTAX;

export const CALL_FAMILIES: CallFamily[] = [
  {
    ...HERMES,
    name: "hermes",
    syntax: HERMES_SYNTAX,
    write: (reply) => reply.before + hermesCalls(reply.calls) + after(reply.after),
  },
  {
    ...HERMES,
    // Spark's own, for templates without one (Gemma 2, SmolLM2): results are framed in the model's turn.
    name: "spark",
    syntax: SPARK_CALL_SYNTAX,
    write: (reply) => reply.before + hermesCalls(reply.calls) + after(reply.after),
  },
  {
    ...HERMES,
    name: "qwen3",
    syntax: {
      ...HERMES_SYNTAX,
      family: "JinjaTemplate",
      reasoning: { open: "<think>", close: "</think>" },
    },
    write: (reply) =>
      `<think>\n${reply.reasoning}\n</think>\n\n${reply.before}${hermesCalls(reply.calls)}${after(reply.after)}`,
  },
  {
    name: "llama-3.1",
    syntax: {
      family: "JinjaTemplate",
      trigger: '{"name": "',
      sectionOpen: "",
      callOpen: '{"name": "',
      nameEnd: '", "parameters": ',
      callClose: "",
      between: "",
      sectionClose: "",
      jsonObject: true,
    },
    stops: ["<|eot_id|>"],
    write: (reply) =>
      reply.calls.map((call) => jsonObjectCall(call, "parameters")).join("\n") + after(reply.after),
    arguments: jsonArguments,
    textBefore: false,
    textAfter: true,
    reorders: false,
  },
  {
    // Llama 3.1 with a Llama 3 tokenizer: node-llama-cpp's own syntax.
    name: "llama-3.1-function",
    syntax: {
      family: "Llama3_1",
      trigger: "<function=",
      sectionOpen: "",
      callOpen: "<function=",
      nameEnd: ">",
      callClose: "</function>",
      between: "",
      sectionClose: "",
      jsonObject: false,
    },
    stops: ["<|eot_id|>"],
    write: (reply) =>
      reply.before +
      reply.calls
        .map((call) => `\n<function=${call.name}>${json(call.arguments, call.spaced)}</function>`)
        .join("") +
      after(reply.after),
    arguments: jsonArguments,
    textBefore: true,
    textAfter: true,
    reorders: false,
  },
  {
    name: "mistral-nemo",
    syntax: {
      family: "Mistral",
      trigger: "[TOOL_CALLS]",
      sectionOpen: "[TOOL_CALLS][",
      callOpen: '{"name": "',
      nameEnd: '", "arguments": ',
      callClose: "}",
      between: ", ",
      sectionClose: "]",
      jsonObject: true,
    },
    stops: ["</s>"],
    write: (reply) =>
      `${reply.before}[TOOL_CALLS][${reply.calls.map((call) => jsonObjectCall(call, "arguments")).join(", ")}]${reply.after}`,
    arguments: jsonArguments,
    textBefore: true,
    textAfter: true,
    reorders: true,
  },
  {
    name: "devstral",
    syntax: {
      family: "JinjaTemplate",
      trigger: "[TOOL_CALLS]",
      sectionOpen: "",
      callOpen: "[TOOL_CALLS]",
      nameEnd: "[ARGS]",
      callClose: "",
      between: "",
      sectionClose: "",
      jsonObject: false,
    },
    stops: ["</s>"],
    write: (reply) =>
      reply.before +
      reply.calls
        .map((call) => `[TOOL_CALLS]${call.name}[ARGS]${json(call.arguments, call.spaced)}`)
        .join("") +
      reply.after,
    arguments: jsonArguments,
    textBefore: true,
    textAfter: true,
    reorders: false,
  },
  {
    name: "qwen3-coder",
    syntax: QWEN3_CODER_CALL_SYNTAX,
    stops: ["<|im_end|>"],
    write: (reply) =>
      reply.before +
      reply.calls
        .map((call) => {
          const parameters = Object.entries(call.arguments).map(
            ([key, value]) =>
              `<parameter=${key}>\n${typeof value === "string" ? value : JSON.stringify(value)}\n</parameter>\n`,
          );
          return `\n<tool_call>\n<function=${call.name}>\n${parameters.join("")}</function>\n</tool_call>`;
        })
        .join("") +
      after(reply.after),
    arguments: xmlArguments,
    textBefore: true,
    textAfter: true,
    reorders: false,
  },
  {
    name: "gemma-4",
    syntax: GEMMA4_CALL_SYNTAX,
    stops: ["<turn|>"],
    write: (reply) =>
      `<|channel>thought\n${reply.reasoning}<channel|>${reply.before}${reply.calls
        .map((call) => `<|tool_call>call:${call.name}${toGemmaText(call.arguments)}<tool_call|>`)
        .join("")}<|tool_response>`,
    arguments: gemmaArguments,
    textBefore: true,
    textAfter: false,
    reorders: false,
  },
  {
    name: "deepseek-v3.1",
    syntax: {
      family: "deepseek-v3.1",
      trigger: "<｜tool▁calls▁begin｜>",
      sectionOpen: "<｜tool▁calls▁begin｜>",
      callOpen: "<｜tool▁call▁begin｜>",
      nameEnd: "<｜tool▁sep｜>",
      callClose: "<｜tool▁call▁end｜>",
      between: "",
      sectionClose: "<｜tool▁calls▁end｜>",
      jsonObject: false,
      reasoning: { open: "<think>", close: "</think>" },
    },
    stops: ["<｜end▁of▁sentence｜>"],
    write: (reply) =>
      `<think>${reply.reasoning}</think>${reply.before}<｜tool▁calls▁begin｜>${reply.calls
        .map(
          (call) =>
            `<｜tool▁call▁begin｜>${call.name}<｜tool▁sep｜>${json(call.arguments, call.spaced)}<｜tool▁call▁end｜>`,
        )
        .join("")}<｜tool▁calls▁end｜>${reply.after}`,
    arguments: jsonArguments,
    textBefore: true,
    textAfter: true,
    reorders: false,
  },
  {
    name: "harmony",
    syntax: HARMONY_CALL_SYNTAX,
    stops: ["<|return|>"],
    write: (reply) =>
      `<|channel|>analysis<|message|>${reply.reasoning}<|end|>` +
      (reply.before ? `<|start|>assistant<|channel|>commentary<|message|>${reply.before}<|end|>` : "") +
      reply.calls
        .map(
          (call, i) =>
            // The recipient in the channel header, or in the role header as the template renders calls.
            `<|start|>assistant${
              i % 2 === 0
                ? `<|channel|>commentary to=functions.${call.name} <|constrain|>json`
                : ` to=functions.${call.name}<|channel|>commentary json`
            }<|message|>${json(call.arguments, call.spaced)}<|call|>`,
        )
        .join("") +
      (reply.after ? `<|start|>assistant<|channel|>final<|message|>${reply.after}<|return|>` : ""),
    arguments: jsonArguments,
    textBefore: true,
    textAfter: true,
    reorders: false,
  },
];

/** Every marker of `family` (text and reasoning must not hold one, or they would not be text). */
export function markersOf(family: CallFamily): string[] {
  const { syntax } = family;
  return [
    ...family.stops,
    syntax.trigger,
    syntax.sectionOpen,
    syntax.callOpen,
    syntax.nameEnd,
    syntax.callClose,
    syntax.sectionClose,
    ...(syntax.reasoning ? [syntax.reasoning.open, syntax.reasoning.close] : []),
    ...(syntax.messages
      ? [syntax.messages.start, syntax.messages.header, syntax.messages.headerEnd, syntax.messages.end]
      : []),
    ...(syntax.stops ?? []),
    "</tool_call>",
    "<|tool_response>",
  ]
    .map((marker) => marker.trim())
    .filter((marker) => marker.length > 0);
}

/** A reply of `family`: text and reasoning free of its markers, 1 to 3 calls. */
export function shapedReply(family: CallFamily): fc.Arbitrary<ShapedReply> {
  const markers = markersOf(family);
  const free = (text: string) => !markers.some((marker) => text.includes(marker));
  // Text that starts and ends visibly: white space around it belongs to the template.
  const text = hardString(30)
    .map((value) => value.trim())
    .filter(free);
  const name = fc.oneof(
    fc.constantFrom("apply_patch", "read_file"),
    fc.stringMatching(/^[a-z][a-z0-9_.-]{0,15}$/),
  );
  const call = fc.record({
    name: family.syntax.args === "xml" ? fc.constant("apply_patch") : name,
    arguments: family.arguments,
    reordered: family.reorders ? fc.boolean() : fc.constant(false),
    spaced: fc.boolean(),
  });
  return fc.record({
    reasoning: family.syntax.reasoning ? text : fc.constant(""),
    before: family.textBefore ? text : fc.constant(""),
    calls: fc.array(call, { minLength: 1, maxLength: 3 }),
    after: family.textAfter ? text : fc.constant(""),
  });
}

/** Parses `pieces` as a token stream would bring them, going on at once after each `calls_begin`. */
export function parsePieces(parser: OutputParser, pieces: readonly string[]): ParsedOutput[] {
  const out: ParsedOutput[] = [];
  for (const piece of pieces) {
    let parsed = parser.push(piece);
    out.push(...parsed);
    while (parsed.at(-1)?.type === "calls_begin") {
      parsed = parser.push("");
      out.push(...parsed);
    }
  }
  out.push(...parser.finish());
  return out;
}

/** A parser for `family`'s replies, as the engine makes one for a request with tools. */
export function familyParser(family: CallFamily, options: { work?: { chars: number } } = {}): OutputParser {
  return new OutputParser(family.stops, family.syntax, { tools: [PATCH_TOOL], ...options });
}
