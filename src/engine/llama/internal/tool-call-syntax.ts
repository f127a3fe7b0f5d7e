import {
  type ChatModelFunctions,
  type ChatWrapper,
  type ChatWrapperSettings,
  type LlamaModel,
  LlamaText,
  SpecialToken,
} from "node-llama-cpp";
import { withGemma4Rendering } from "./gemma4-rendering.js";

/**
 * How a model writes function calls as text, in the syntax its chat template taught it:
 *
 *     [sectionOpen] callOpen NAME nameEnd ARGS callClose [between callOpen ... callClose] [sectionClose]
 *
 * e.g. Qwen/Hermes `<tool_call>\n{"name": "` NAME `", "arguments": ` ARGS `}\n</tool_call>`, Mistral
 * Nemo `[TOOL_CALLS][` `{"name": "` NAME `", "arguments": ` ARGS `}` (`, ` ...) `]`, Llama 3.1
 * `<function=` NAME `>` ARGS `</function>`. ARGS is a JSON object, or the template's own argument
 * syntax (see `args`). A call starts where `trigger`
 * appears in the output: from there on the engine samples under a grammar for the rest of the call
 * (or the section of calls), so what follows always parses; before it the model writes freely.
 */
export interface CallSyntax {
  /** Which family's rules these are, for messages and tests. */
  family: string;
  /** The text that starts a call (per-call formats) or a section of calls. */
  trigger: string;
  /** Opens a section of calls (empty: every call stands alone and starts with `trigger`). */
  sectionOpen: string;
  callOpen: string;
  nameEnd: string;
  callClose: string;
  /** Between calls of one section. */
  between: string;
  sectionClose: string;
  /**
   * The call is a JSON object `{"name": ..., "arguments": ...}` between `trigger` and the closing
   * tag: parsing also accepts other spacing and key order (and `parameters` for `arguments`).
   */
  jsonObject: boolean;
  /**
   * ARGS in another syntax than a JSON object: Qwen3-Coder's `<parameter=KEY>\nVALUE\n</parameter>\n`
   * list ("xml"), or Gemma 4's object members `key:<|"|>text<|"|>,n:1` ("gemma"). They are parsed
   * into JSON arguments.
   */
  args?: "xml" | "gemma";
  /** Reasoning markers (`<think>` ... `</think>`): text between them is reasoning, not answer. */
  reasoning?: { open: string; close: string };
  /**
   * Harmony's message framing (gpt-oss): the reply is a series of messages, each
   * `[start]header CHANNEL [to=RECIPIENT] headerEnd CONTENT end`. Headers and framing are never
   * shown; a reasoning channel's content is reasoning; a header naming a function starts a call.
   */
  messages?: { start: string; header: string; headerEnd: string; end: string; reasoning: string[] };
  /** Markers that end the turn once a call may follow (Gemma 4's `<|tool_response>`). */
  stops?: string[];
  /** Template framing a model may echo into its reply: dropped, never text. */
  framing?: string[];
}

/**
 * Spark's own call syntax, for chat templates that have none (SmolLM2, Gemma 2): the Hermes format
 * most instruction-tuned models have seen, documented in the system prompt the same way.
 */
export const SPARK_CALL_SYNTAX: CallSyntax = Object.freeze({
  family: "spark",
  trigger: "<tool_call>",
  sectionOpen: "",
  callOpen: '<tool_call>\n{"name": "',
  nameEnd: '", "arguments": ',
  callClose: "}\n</tool_call>",
  between: "",
  sectionClose: "",
  jsonObject: true,
  // A tool's result is rendered between these (see withSparkCallSyntax): a reply that opens one
  // makes up a result, and one that closes it echoes the framing (SmolLM2 answered `</tool_response>`).
  stops: ["<tool_response>"],
  framing: ["</tool_response>"],
});

/** Wrappers given Spark's syntax by {@link withSparkCallSyntax}. */
const withSpark = new WeakSet<ChatWrapper>();

/** node-llama-cpp's fallback syntax for wrappers without native function calling. */
const GENERIC_CALL_PREFIX = "||call:";

/**
 * The call syntax of `wrapper` (after {@link withSparkCallSyntax}), with the fixes its templates
 * need: a trigger that is a marker rather than a JSON opening, closing special tokens that end the
 * turn left out (the grammar ends before them), DeepSeek's markers whole.
 */
export function callSyntaxOf(model: LlamaModel, wrapper: ChatWrapper): CallSyntax {
  const functions = wrapper.settings.functions;
  const text = (value: unknown) => visibleText(model, value);
  const callOpen = text(functions.call.prefix);
  if (withSpark.has(wrapper) || callOpen.trimStart().startsWith(GENERIC_CALL_PREFIX))
    return SPARK_CALL_SYNTAX;
  const template = templateOf(wrapper);
  if (template.includes("tool▁calls▁begin")) return DEEPSEEK_V3_CALL_SYNTAX;
  if (isQwen3Coder(template))
    return { ...QWEN3_CODER_CALL_SYNTAX, reasoning: reasoningOf(model, wrapper.settings) };
  if (isGemma4(wrapper)) return GEMMA4_CALL_SYNTAX;
  if (isHarmony(wrapper)) return HARMONY_CALL_SYNTAX;
  const section = functions.parallelism?.call;
  const sectionOpen = text(section?.sectionPrefix ?? "").trimStart();
  const syntax: CallSyntax = {
    family: wrapper.wrapperName,
    trigger: "",
    sectionOpen,
    callOpen: sectionOpen ? callOpen : callOpen.trimStart(),
    nameEnd: text(functions.call.paramsPrefix),
    callClose: trimEndOfTurn(text(functions.call.suffix)),
    between: sectionOpen ? text(section?.betweenCalls ?? "") : "",
    sectionClose: sectionOpen ? trimEndOfTurn(text(section?.sectionSuffix ?? "")) : "",
    jsonObject: /^\s*\{\s*"name"\s*:\s*"$/.test(callOpen.replace(/^[^{]*/, "")),
    reasoning: reasoningOf(model, wrapper.settings),
  };
  syntax.trigger = triggerOf(sectionOpen || syntax.callOpen);
  return syntax;
}

/**
 * DeepSeek V3.1's format, which node-llama-cpp's template reader splits inside its markers:
 * `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>`.
 */
const DEEPSEEK_V3_CALL_SYNTAX: CallSyntax = Object.freeze({
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
});

/**
 * Qwen3-Coder's XML calls (also Qwen3.5's), one per `<tool_call>`:
 * `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>`.
 * llama.cpp recognises the template the same way.
 */
export const QWEN3_CODER_CALL_SYNTAX: CallSyntax = Object.freeze({
  family: "qwen3-coder",
  trigger: "<tool_call>",
  sectionOpen: "",
  callOpen: "<tool_call>\n<function=",
  nameEnd: ">\n",
  callClose: "</function>\n</tool_call>",
  between: "",
  sectionClose: "",
  jsonObject: false,
  args: "xml",
});

function isQwen3Coder(template: string): boolean {
  return (
    template.includes("<tool_call>") &&
    template.includes("<function=") &&
    template.includes("<parameter=") &&
    !template.includes("'<tool_call><function=' ~ tool_call.name ~ '>'")
  );
}

/**
 * Gemma 4's calls, each `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:1}<tool_call|>`; after its calls
 * the model opens the tool's response, which ends its turn.
 */
export const GEMMA4_CALL_SYNTAX: CallSyntax = Object.freeze({
  family: "gemma-4",
  trigger: "<|tool_call>",
  sectionOpen: "",
  callOpen: "<|tool_call>call:",
  nameEnd: "{",
  callClose: "}<tool_call|>",
  between: "",
  sectionClose: "",
  jsonObject: false,
  args: "gemma",
  reasoning: { open: "<|channel>thought", close: "<channel|>" },
  stops: ["<|tool_response>"],
});

function isGemma4(wrapper: ChatWrapper): boolean {
  return wrapper.wrapperName === "Gemma 4" || templateOf(wrapper).includes("<|tool_call>call:");
}

/**
 * gpt-oss's Harmony format: reasoning in the analysis channel, a call as a message to
 * `functions.NAME` (` to=functions.NAME<|constrain|>json<|message|>{...}<|call|>`, the recipient
 * in the channel header or the role header). A forced call is written as node-llama-cpp renders
 * calls in the history: in the commentary channel.
 */
export const HARMONY_CALL_SYNTAX: CallSyntax = Object.freeze({
  family: "harmony",
  trigger: "to=functions.",
  sectionOpen: "",
  callOpen: "<|channel|>commentary to=functions.",
  nameEnd: "<|constrain|>json<|message|>",
  callClose: "<|call|>",
  between: "",
  sectionClose: "",
  jsonObject: false,
  reasoning: { open: "<|channel|>analysis<|message|>", close: "<|end|>" },
  messages: {
    start: "<|start|>assistant",
    header: "<|channel|>",
    headerEnd: "<|message|>",
    end: "<|end|>",
    reasoning: ["analysis"],
  },
});

function isHarmony(wrapper: ChatWrapper): boolean {
  const template = templateOf(wrapper);
  return (
    wrapper.wrapperName === "Harmony" || (template.includes("<|channel|>") && template.includes("<|start|>"))
  );
}

/**
 * The marker a call or section starts with: up to the first `{`, or the whole opening when the
 * opening is a tag (`<function=`). A bare JSON opening is never a trigger: a reply that is a JSON
 * document (a package.json) is not a call.
 */
function triggerOf(opening: string): string {
  const brace = opening.indexOf("{");
  const marker = (brace === -1 ? opening : opening.slice(0, brace)).trim();
  // `[TOOL_CALLS][`: the marker is the special token; the grammar writes the bracket.
  return marker.replace(/(?<=.)\[$/, "") || opening.trim();
}

/** Special tokens that end the turn (`<|eom_id|>`, EOS) close a call in some templates: the grammar stops before them. */
function trimEndOfTurn(text: string): string {
  return text.replace(/(<\|eom_id\|>|<\|eot_id\|>|<\|im_end\|>[\s\S]*|<\/s>|EOS)+\s*$/u, "");
}

function reasoningOf(model: LlamaModel, settings: ChatWrapperSettings): CallSyntax["reasoning"] {
  const thought = settings.segments?.thought;
  if (!thought) return undefined;
  const open = visibleText(model, thought.prefix).trim();
  const close = visibleText(model, thought.suffix ?? "").trim();
  return open && close ? { open, close } : undefined;
}

function templateOf(wrapper: ChatWrapper): string {
  const template = (wrapper as { template?: unknown }).template;
  return typeof template === "string" ? template : "";
}

/**
 * A wrapper setting as the model writes it: special tokens as their text, except the end-of-turn
 * tokens it may end with (an EOS in a Mistral section suffix), where the turn ends instead.
 */
function visibleText(model: LlamaModel, value: unknown): string {
  if (typeof value === "string") return value;
  if (!(value instanceof LlamaText)) return "";
  const values = [...value.values];
  while (values.length > 0 && values.at(-1) instanceof SpecialToken) values.pop();
  return model.detokenize(LlamaText(values).tokenize(model.tokenizer), true);
}

/**
 * Gives a wrapper without native function calling (node-llama-cpp's `||call:` fallback) Spark's
 * own call syntax: calls in the history are rendered in it, and the system prompt documents it
 * with the tools' JSON schemas, as Hermes-format templates do. Other wrappers render arguments in
 * their template's own syntax (see {@link withTemplateArguments}).
 */
export function withSparkCallSyntax(wrapper: ChatWrapper): ChatWrapper {
  const call = wrapper.settings.functions.call;
  const prefix = typeof call.prefix === "string" ? call.prefix : LlamaText(call.prefix).toString();
  if (!prefix.trimStart().startsWith(GENERIC_CALL_PREFIX)) return withTemplateArguments(wrapper);
  const spark = SPARK_CALL_SYNTAX;
  (wrapper as { settings: ChatWrapperSettings }).settings = {
    ...wrapper.settings,
    functions: {
      call: {
        optionalPrefixSpace: true,
        prefix: `\n${spark.callOpen}`,
        paramsPrefix: spark.nameEnd,
        suffix: spark.callClose,
        emptyCallParamsPlaceholder: {},
      },
      result: { prefix: "\n<tool_response>\n", suffix: "\n</tool_response>\n" },
    },
  };
  wrapper.generateAvailableFunctionsSystemText = (functions: ChatModelFunctions) =>
    LlamaText(sparkToolsText(functions));
  withSpark.add(wrapper);
  return wrapper;
}

/**
 * A template that writes arguments in its own syntax (Qwen3-Coder's parameters, Gemma 4's values)
 * renders them from the arguments object. node-llama-cpp's reading of such a template passes them
 * wrapped in one `params` key, or as a JSON string; here they go to the template as the object, so
 * a call in the history is rendered as the model writes it (and as the grammar makes it write it).
 * node-llama-cpp's own Gemma 4 wrapper is taught Gemma 4's syntax.
 */
function withTemplateArguments(wrapper: ChatWrapper): ChatWrapper {
  if (wrapper.wrapperName === "Gemma 4") return withGemma4Rendering(wrapper);
  const template = templateOf(wrapper);
  if (!isQwen3Coder(template) && !template.includes("<|tool_call>call:")) return wrapper;
  // JinjaTemplateChatWrapper's fields for how it passes arguments to the template.
  const jinja = wrapper as unknown as {
    _wrapFunctionParamsInsideMapKey?: string;
    _stringifyFunctionParams?: boolean;
  };
  jinja._wrapFunctionParamsInsideMapKey = undefined;
  jinja._stringifyFunctionParams = false;
  return wrapper;
}

/** The tool section Spark adds to the system prompt of a template without one. */
export function sparkToolsText(functions: ChatModelFunctions): string {
  const names = Object.keys(functions);
  if (names.length === 0) return "";
  const tools = names.map((name) => {
    const fn = functions[name]!;
    return JSON.stringify({
      type: "function",
      function: { name, description: fn.description ?? "", parameters: fn.params ?? { type: "object" } },
    });
  });
  return [
    "# Tools",
    "",
    "You may call one or more functions to assist with the user query.",
    "",
    "You are provided with function signatures within <tools></tools> XML tags:",
    "<tools>",
    ...tools,
    "</tools>",
    "",
    "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:",
    "<tool_call>",
    '{"name": <function-name>, "arguments": <args-json-object>}',
    "</tool_call>",
  ].join("\n");
}
