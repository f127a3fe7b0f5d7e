import type {
  ChatHistoryItem,
  ChatModelFunctionCall,
  ChatModelFunctions,
  ChatWrapper,
  LlamaModel,
  LlamaText,
  Token,
} from "node-llama-cpp";
import type { ChatMessage, ToolDefinition } from "../../../protocol/chat.js";
import { SparkError } from "../../../protocol/errors.js";

export interface RenderedPrompt {
  tokens: Token[];
  /** Texts that end the assistant's turn, as the model writes them. */
  stopTriggers: string[];
}

/**
 * Turns the engine-level conversation into node-llama-cpp's chat history, so the model's own chat
 * wrapper renders it (template, tool section, native call format). Tool results are attached to
 * the call they answer, as the wrappers expect. The history ends in an open assistant turn.
 */
export function toChatHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  const openCalls = new Map<string, ChatModelFunctionCall>();
  for (const [index, message] of messages.entries()) {
    const last = history.at(-1);
    switch (message.role) {
      case "system":
        if (last?.type === "system" && typeof last.text === "string") last.text += `\n\n${message.content}`;
        else history.push({ type: "system", text: message.content });
        break;
      case "user":
        history.push({ type: "user", text: message.content });
        break;
      case "assistant": {
        const response: (string | ChatModelFunctionCall)[] = message.content ? [message.content] : [];
        for (const call of message.toolCalls ?? []) {
          const item: ChatModelFunctionCall = {
            type: "functionCall",
            name: call.name,
            params: parseArguments(call.arguments, index),
            result: undefined,
          };
          openCalls.set(call.callId, item);
          response.push(item);
        }
        if (last?.type === "model") last.response.push(...response);
        else history.push({ type: "model", response });
        break;
      }
      case "tool": {
        const call = openCalls.get(message.callId);
        if (!call) {
          throw new SparkError(
            "invalid_request",
            `No function call with call_id '${message.callId}' precedes its output.`,
            {
              param: `input[${index}].call_id`,
            },
          );
        }
        call.result = message.content;
        openCalls.delete(message.callId);
        break;
      }
      default: {
        const unknown: never = message;
        throw new Error(`Unknown message ${JSON.stringify(unknown)}`);
      }
    }
  }
  for (const [callId] of openCalls) {
    throw new SparkError("invalid_request", `No tool output found for function call ${callId}.`, {
      param: "input",
    });
  }
  if (history.at(-1)?.type !== "model") history.push({ type: "model", response: [] });
  return history;
}

function parseArguments(text: string, index: number): unknown {
  try {
    return text.trim() === "" ? {} : JSON.parse(text);
  } catch {
    throw new SparkError("invalid_request", "Function call arguments must be a JSON text.", {
      param: `input[${index}].arguments`,
    });
  }
}

export function toChatFunctions(
  tools: readonly ToolDefinition[] | undefined,
): ChatModelFunctions | undefined {
  if (!tools?.length) return undefined;
  // Client schemas are plain JSON Schema; the wrapper only prints them into the prompt.
  return Object.fromEntries(
    tools.map((tool) => [tool.name, { description: tool.description, params: tool.parameters as never }]),
  ) as ChatModelFunctions;
}

/** Renders a conversation to the exact tokens the model will see. */
export function renderPrompt(
  model: LlamaModel,
  wrapper: ChatWrapper,
  messages: readonly ChatMessage[],
  tools: readonly ToolDefinition[] | undefined,
): RenderedPrompt {
  const state = wrapper.generateContextState({
    chatHistory: toChatHistory(messages),
    availableFunctions: toChatFunctions(tools),
  });
  const tokens = state.contextText.tokenize(model.tokenizer);
  // Wrappers open with BOS; where BOS is the turn opener itself (SmolLM2's `<|im_start|>`) and the
  // model asks for no BOS, that would open the prompt twice.
  const bos = model.tokens.bos;
  if (bos !== null && !model.tokens.shouldPrependBosToken && tokens[0] === bos && tokens[1] === bos)
    tokens.shift();
  return {
    tokens,
    stopTriggers: state.stopGenerationTriggers
      .map((trigger) => textOf(model, trigger))
      .filter((t) => t !== ""),
  };
}

function textOf(model: LlamaModel, text: LlamaText | string): string {
  if (typeof text === "string") return text;
  return model.detokenize(text.tokenize(model.tokenizer), true);
}
