import {
  ChatMLChatWrapper,
  Gemma4ChatWrapper,
  getLlama,
  HarmonyChatWrapper,
  JinjaTemplateChatWrapper,
  type Llama,
  Llama3_1ChatWrapper,
  type LlamaModel,
  MistralChatWrapper,
  QwenChatWrapper,
} from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { ChatMessage, ToolDefinition } from "../../../protocol/chat.js";
import { readTemplate } from "../../test-support/chat-templates.js";
import { testModelPath } from "../../test-support/test-model.js";
import { renderPrompt } from "./chat-rendering.js";
import {
  callSyntaxOf,
  GEMMA4_CALL_SYNTAX,
  HARMONY_CALL_SYNTAX,
  SPARK_CALL_SYNTAX,
  withSparkCallSyntax,
} from "./tool-call-syntax.js";

const PICK: ToolDefinition = {
  name: "pick",
  description: "Picks.",
  parameters: {
    type: "object",
    properties: {
      mode: { type: "string", enum: ["a", "b"], description: "The mode." },
      count: { type: "integer" },
      paths: { type: "array", items: { type: "string" } },
      opts: { type: "object", properties: { deep: { type: "boolean" } }, required: ["deep"] },
    },
    required: ["mode"],
  },
};

/** A conversation with one answered call to `pick`. */
const WITH_CALL: ChatMessage[] = [
  { role: "system", content: "SYS" },
  { role: "user", content: "Hi" },
  {
    role: "assistant",
    content: "",
    toolCalls: [
      {
        callId: "c1",
        name: "pick",
        arguments: '{"mode": "a", "count": 2, "paths": ["x", "y"], "opts": {"deep": true}}',
      },
    ],
  },
  { role: "tool", callId: "c1", name: "pick", content: "RESULT" },
];

/** node-llama-cpp's specialized wrappers, as it picks them for real models of each family. */
describe("call syntax of node-llama-cpp's wrappers", () => {
  let llama: Llama;
  let model: LlamaModel;
  beforeAll(async () => {
    llama = await getLlama({ gpu: false, build: "never", maxThreads: 1 });
    model = await llama.loadModel({ modelPath: await testModelPath() });
  });
  afterAll(async () => {
    await model.dispose();
    await llama.dispose();
  });

  test("Qwen: the <tool_call> tag triggers, the JSON object is the call", () => {
    const syntax = callSyntaxOf(model, new QwenChatWrapper());
    expect(syntax).toMatchObject({ trigger: "<tool_call>", jsonObject: true, sectionOpen: "" });
  });

  test("Llama 3.1: the call closes at </function>, before the end-of-message token", () => {
    const syntax = callSyntaxOf(model, new Llama3_1ChatWrapper());
    expect(syntax).toMatchObject({ trigger: "<function=", nameEnd: ">", callClose: "</function>" });
  });

  test("Mistral: the [TOOL_CALLS] marker triggers, not a JSON opening", () => {
    const syntax = callSyntaxOf(model, new MistralChatWrapper());
    expect(syntax).toMatchObject({
      trigger: "[TOOL_CALLS]",
      sectionOpen: "[TOOL_CALLS][",
      sectionClose: "]",
    });
  });

  test("a wrapper without function calling gets Spark's syntax, documented in the system prompt", () => {
    const wrapper = withSparkCallSyntax(new ChatMLChatWrapper());
    expect(callSyntaxOf(model, wrapper)).toBe(SPARK_CALL_SYNTAX);
    const tools = [{ name: "read_file", description: "Reads a file.", parameters: { type: "object" } }];
    const prompt = model.detokenize(
      renderPrompt(model, wrapper, [{ role: "user", content: "Hi" }], tools).tokens,
      true,
    );
    expect(prompt).toContain("<tools>\n");
    expect(prompt).toContain('"name":"read_file"');
    expect(prompt).toContain(
      '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
    );
    expect(prompt).not.toContain("||call");
    // A call in the history is rendered in the same syntax.
    const history = model.detokenize(
      renderPrompt(
        model,
        wrapper,
        [
          { role: "user", content: "Hi" },
          {
            role: "assistant",
            content: "",
            toolCalls: [{ callId: "c1", name: "read_file", arguments: '{"path": "a"}' }],
          },
          { role: "tool", callId: "c1", name: "read_file", content: "text" },
        ],
        tools,
      ).tokens,
      true,
    );
    expect(history).toContain('<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>');
  });

  test("Qwen3-Coder: its template renders a call's arguments as its parameters, not as one JSON `params`", async () => {
    const template = await readTemplate("Qwen3-Coder.jinja");
    const wrapper = withSparkCallSyntax(new JinjaTemplateChatWrapper({ template }));
    expect(callSyntaxOf(model, wrapper)).toMatchObject({ trigger: "<tool_call>", args: "xml" });
    const prompt = model.detokenize(renderPrompt(model, wrapper, WITH_CALL, [PICK]).tokens, true);
    expect(prompt).toContain("<tools>\n<function>\n<name>pick</name>");
    expect(prompt).toContain(
      '<tool_call>\n<function=pick>\n<parameter=mode>\na\n</parameter>\n<parameter=count>\n2\n</parameter>\n<parameter=paths>\n["x", "y"]\n</parameter>\n<parameter=opts>\n{"deep": true}\n</parameter>\n</function>\n</tool_call>',
    );
    expect(prompt).not.toContain("<parameter=params>");
  });

  test("Gemma 4: tools, calls and results in the template's own syntax, not JSON", () => {
    const wrapper = withSparkCallSyntax(new Gemma4ChatWrapper({ reasoning: false }));
    expect(callSyntaxOf(model, wrapper)).toBe(GEMMA4_CALL_SYNTAX);
    const prompt = model.detokenize(renderPrompt(model, wrapper, WITH_CALL, [PICK]).tokens, true);
    // As google-gemma-4-31B-it.jinja renders the same tool and call.
    expect(prompt).toContain(
      '<|turn>system\nSYS<|tool>declaration:pick{description:<|"|>Picks.<|"|>,parameters:{properties:{count:{type:<|"|>INTEGER<|"|>},mode:{description:<|"|>The mode.<|"|>,enum:[<|"|>a<|"|>,<|"|>b<|"|>],type:<|"|>STRING<|"|>},opts:{properties:{deep:{type:<|"|>BOOLEAN<|"|>}},required:[<|"|>deep<|"|>],type:<|"|>OBJECT<|"|>},paths:{items:{type:<|"|>STRING<|"|>},type:<|"|>ARRAY<|"|>}},required:[<|"|>mode<|"|>],type:<|"|>OBJECT<|"|>}}<tool|><turn|>',
    );
    expect(prompt).toContain(
      '<|turn>model\n<|tool_call>call:pick{count:2,mode:<|"|>a<|"|>,opts:{deep:true},paths:[<|"|>x<|"|>,<|"|>y<|"|>]}<tool_call|><|tool_response>response:pick{value:<|"|>RESULT<|"|>}<tool_response|>',
    );
  });

  test("Harmony: calls are messages to functions.NAME, read with their message framing", () => {
    expect(callSyntaxOf(model, new HarmonyChatWrapper())).toBe(HARMONY_CALL_SYNTAX);
    expect(HARMONY_CALL_SYNTAX.messages?.reasoning).toEqual(["analysis"]);
  });
});
