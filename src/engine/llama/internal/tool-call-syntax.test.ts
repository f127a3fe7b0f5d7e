import {
  ChatMLChatWrapper,
  getLlama,
  type Llama,
  Llama3_1ChatWrapper,
  type LlamaModel,
  MistralChatWrapper,
  QwenChatWrapper,
} from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { testModelPath } from "../../test-support/test-model.js";
import { renderPrompt } from "./chat-rendering.js";
import { callSyntaxOf, SPARK_CALL_SYNTAX, withSparkCallSyntax } from "./tool-call-syntax.js";

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
});
