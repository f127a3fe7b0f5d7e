import type { ChatMessage } from "../../../protocol/chat.js";
import type { OutputFormat } from "../../../protocol/output-format.js";
import type { GenerateRequest } from "../../engine.js";

/**
 * Chat Completions as sent to an upstream: the widest-supported protocol among vLLM, SGLang,
 * llama-server, Ollama and cloud APIs. Only fields a request sets are sent, so servers that do
 * not know an optional field (`prediction`, `prompt_cache_key`) see it only when it matters.
 */

type WireMessage =
  | { role: "system" | "user"; content: string }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: { id: string; type: "function"; function: { name: string; arguments: string } }[];
    }
  | { role: "tool"; tool_call_id: string; content: string };

export interface ChatCompletionRequestBody {
  model: string;
  messages: WireMessage[];
  stream: true;
  stream_options: { include_usage: true };
  tools?: { type: "function"; function: { name: string; description?: string; parameters?: object } }[];
  tool_choice?: "required" | { type: "function"; function: { name: string } };
  max_tokens?: number;
  temperature: number;
  top_p?: number;
  seed?: number;
  stop?: string[];
  prediction?: { type: "content"; content: string };
  prompt_cache_key?: string;
  response_format?: WireResponseFormat;
}

/** Chat Completions' `response_format` for structured output (the schema under `json_schema`). */
type WireResponseFormat =
  | { type: "json_object" }
  | {
      type: "json_schema";
      json_schema: { name: string; schema: Record<string, unknown>; description?: string; strict?: boolean };
    };

/** One streamed chunk, as far as Spark reads it. */
export interface ChatCompletionChunk {
  choices?: {
    index?: number;
    delta?: {
      content?: string | null;
      /** Reasoning text (llama-server, vLLM, DeepSeek), never part of the answer. */
      reasoning_content?: string | null;
      tool_calls?: {
        index?: number;
        id?: string;
        function?: { name?: string; arguments?: string };
      }[];
    };
    finish_reason?: string | null;
  }[];
  usage?: {
    prompt_tokens?: number;
    completion_tokens?: number;
    prompt_tokens_details?: { cached_tokens?: number } | null;
    completion_tokens_details?: {
      accepted_prediction_tokens?: number;
      rejected_prediction_tokens?: number;
    } | null;
  } | null;
  error?: { message?: string; type?: string; code?: string | null };
}

/**
 * The request body for `request`. A pre-warm (`prefillOnly`) asks for one token, which the engine
 * discards: upstreams have no "evaluate only" call, and this still leaves the prompt in their
 * prefix cache (vLLM, SGLang and llama-server cache prefixes), which is what a pre-warm is for.
 */
export function chatCompletionBody(request: GenerateRequest, model: string): ChatCompletionRequestBody {
  const maxTokens = request.prefillOnly ? 1 : request.maxOutputTokens;
  return {
    model,
    messages: request.messages.map(wireMessage),
    stream: true,
    stream_options: { include_usage: true },
    ...(request.tools?.length
      ? {
          tools: request.tools.map((tool) => ({
            type: "function" as const,
            function: {
              name: tool.name,
              ...(tool.description ? { description: tool.description } : {}),
              ...(tool.parameters ? { parameters: tool.parameters } : {}),
            },
          })),
        }
      : {}),
    // "auto" is every upstream's default, so only a forced call is sent (servers that do not know
    // tool_choice then see the request unchanged).
    ...(request.tools?.length && request.toolChoice && request.toolChoice !== "auto"
      ? {
          tool_choice:
            request.toolChoice === "required"
              ? ("required" as const)
              : { type: "function" as const, function: { name: request.toolChoice.name } },
        }
      : {}),
    ...(maxTokens !== undefined ? { max_tokens: maxTokens } : {}),
    // The engine contract's default is greedy; upstreams default to sampling.
    temperature: request.temperature ?? 0,
    ...(request.topP !== undefined ? { top_p: request.topP } : {}),
    ...(request.seed !== undefined ? { seed: request.seed } : {}),
    ...(request.stop?.length ? { stop: request.stop } : {}),
    ...(request.prediction && !request.prefillOnly
      ? { prediction: { type: "content" as const, content: request.prediction } }
      : {}),
    ...(request.format && !request.prefillOnly
      ? { response_format: wireResponseFormat(request.format) }
      : {}),
    // Routes the conversation to its cached prefix where the upstream understands it (OpenAI,
    // Spark); others ignore it.
    ...(request.conversation ? { prompt_cache_key: request.conversation } : {}),
  };
}

/** Structured output passed through as the upstream's own `response_format`, the schema unchanged. */
function wireResponseFormat(format: OutputFormat): WireResponseFormat {
  if (format.type === "json_object") return { type: "json_object" };
  const { type: _, ...json_schema } = format;
  return { type: "json_schema", json_schema };
}

function wireMessage(message: ChatMessage): WireMessage {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant": {
      const calls = message.toolCalls ?? [];
      if (calls.length === 0) return { role: "assistant", content: message.content };
      return {
        role: "assistant",
        content: message.content || null,
        tool_calls: calls.map((call) => ({
          id: call.callId,
          type: "function",
          function: { name: call.name, arguments: call.arguments },
        })),
      };
    }
    case "tool":
      return { role: "tool", tool_call_id: message.callId, content: message.content };
    default: {
      const unknown: never = message;
      throw new Error(`Unknown message ${JSON.stringify(unknown)}`);
    }
  }
}
