import type { IncomingMessage, ServerResponse } from "node:http";
import type { GenerateResult } from "../engine/engine.js";
import type { ChatMessage, ToolCall, ToolDefinition } from "../protocol/chat.js";
import {
  type ChatCompletionBody,
  type ChatCompletionUsage,
  chatCompletionBodySchema,
  type FinishReason,
} from "../protocol/chat-completions.js";
import { SparkError } from "../protocol/errors.js";
import { outputFormatOfResponseFormat } from "../protocol/output-format.js";
import { validate } from "../protocol/validate.js";
import { admitHttp } from "./admission/admit-http.js";
import { checkToolPairing, contentText, engineToolChoice, type WireToolChoice } from "./input-conversion.js";
import { SseWriter, sendJson } from "./internal/http-io.js";
import { newId } from "./internal/ids.js";
import { readJsonBody } from "./internal/json-body.js";
import type { ServerContext } from "./server-context.js";
import { checkOutputFormat } from "./structured-output.js";

/** `POST /v1/chat/completions`: stateless; the engine still reuses any cached prefix. */
export async function handleChatCompletionsPost(
  req: IncomingMessage,
  res: ServerResponse,
  ctx: ServerContext,
): Promise<void> {
  const body = validate(chatCompletionBodySchema, await readJsonBody(req, ctx));
  const tools = toTools(body);
  const toolChoice = engineToolChoice(wireToolChoice(body.tool_choice), tools, {
    choice: "tool_choice",
    name: "tool_choice.function.name",
  });
  const engine = ctx.models.resolve(body.model);
  const format = outputFormatOfResponseFormat(body.response_format);
  checkOutputFormat(engine, format, "response_format.json_schema");
  const messages = toMessages(body);
  checkToolPairing(messages, "messages");
  using admission = await admitHttp(ctx, req, res, engine);
  const controller = new AbortController();
  res.on("close", () => controller.abort());
  const id = newId("chatcmpl");
  const created = Math.floor(Date.now() / 1000);
  const model = engine.info.id;
  const stream = admission.engine.generate(
    {
      messages,
      tools,
      ...(toolChoice !== "auto" ? { toolChoice } : {}),
      ...(format ? { format } : {}),
      maxOutputTokens: body.max_completion_tokens ?? body.max_tokens ?? undefined,
      temperature: body.temperature ?? undefined,
      topP: body.top_p ?? undefined,
      seed: body.seed ?? undefined,
      stop: typeof body.stop === "string" ? [body.stop] : (body.stop ?? undefined),
      ...(body.prediction
        ? { prediction: contentText(body.prediction.content as never, "prediction.content") }
        : {}),
      // The ecosystem's cache-routing hint doubles as the conversation whose KV state to keep.
      ...(body.prompt_cache_key ? { conversation: body.prompt_cache_key } : {}),
    },
    { signal: controller.signal },
  );

  if (!body.stream) {
    let text = "";
    let reasoning = "";
    const calls: ToolCall[] = [];
    let result: GenerateResult | undefined;
    for await (const event of stream) {
      if (event.type === "text") text += event.text;
      else if (event.type === "reasoning") reasoning += event.text;
      else if (event.type === "tool_call") calls.push(event.call);
      else if (event.type === "done") result = event.result;
    }
    if (!result) throw new SparkError("server_error", "The engine ended without a result.");
    sendJson(res, 200, {
      id,
      object: "chat.completion",
      created,
      model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: text || (calls.length ? null : ""),
            refusal: null,
            ...(reasoning ? { reasoning_content: reasoning } : {}),
            ...(calls.length ? { tool_calls: calls.map(wireToolCall) } : {}),
          },
          finish_reason: finishReason(result, calls.length),
          logprobs: null,
        },
      ],
      usage: usageOf(result),
    });
    return;
  }

  const sse = new SseWriter(res);
  const chunk = (delta: object, finish: FinishReason | null) =>
    JSON.stringify({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    });
  try {
    sse.send(chunk({ role: "assistant", content: "" }, null));
    // Each call's `index`, by call id, from its first chunk (the id and name) to its last.
    const indexes = new Map<string, number>();
    let finished = 0;
    for await (const event of stream) {
      if (event.type === "text") sse.send(chunk({ content: event.text }, null));
      else if (event.type === "reasoning") sse.send(chunk({ reasoning_content: event.text }, null));
      else if (event.type === "tool_call_start") {
        indexes.set(event.callId, indexes.size);
        const call = { callId: event.callId, name: event.name, arguments: "" };
        sse.send(chunk({ tool_calls: [{ index: indexes.size - 1, ...wireToolCall(call) }] }, null));
      } else if (event.type === "tool_call_delta") {
        const index = indexes.get(event.callId);
        if (index === undefined)
          throw new SparkError(
            "server_error",
            `The engine streamed arguments of an unknown call '${event.callId}'.`,
          );
        sse.send(chunk({ tool_calls: [{ index, function: { arguments: event.delta } }] }, null));
      } else if (event.type === "tool_call") {
        finished++;
        // A call that streamed has been sent whole already; one sent at once goes in one chunk.
        if (indexes.has(event.call.callId)) continue;
        indexes.set(event.call.callId, indexes.size);
        sse.send(chunk({ tool_calls: [{ index: indexes.size - 1, ...wireToolCall(event.call) }] }, null));
      } else {
        sse.send(chunk({}, finishReason(event.result, finished)));
        if (body.stream_options?.include_usage) {
          sse.send(
            JSON.stringify({
              id,
              object: "chat.completion.chunk",
              created,
              model,
              choices: [],
              usage: usageOf(event.result),
            }),
          );
        }
      }
    }
    sse.send("[DONE]");
  } catch (error) {
    const spark = SparkError.from(error);
    sse.send(JSON.stringify({ error: spark.toWire() }));
  } finally {
    sse.end();
  }
}

/** Chat Completions nests a named function's name under `function`. */
function wireToolChoice(choice: ChatCompletionBody["tool_choice"]): WireToolChoice | undefined {
  if (choice === null || choice === undefined || typeof choice === "string") return choice ?? undefined;
  // The schema refuses a `function` choice without `function.name`.
  if (choice.type === "function")
    return { type: "function", name: (choice as { function: { name: string } }).function.name };
  return choice;
}

function toMessages(body: ChatCompletionBody): ChatMessage[] {
  const names = new Map<string, string>();
  return body.messages.map((message, index): ChatMessage => {
    const param = `messages[${index}].content`;
    switch (message.role) {
      case "system":
      case "developer":
        return { role: "system", content: contentText(message.content as never, param) };
      case "user":
        return { role: "user", content: contentText(message.content as never, param) };
      case "assistant": {
        const toolCalls = (message.tool_calls ?? []).map((call) => {
          names.set(call.id, call.function.name);
          return { callId: call.id, name: call.function.name, arguments: call.function.arguments };
        });
        return {
          role: "assistant",
          content: message.content ? contentText(message.content as never, param) : "",
          ...(toolCalls.length ? { toolCalls } : {}),
        };
      }
      default:
        return {
          role: "tool",
          callId: message.tool_call_id,
          name: names.get(message.tool_call_id) ?? "",
          content: contentText(message.content as never, param),
        };
    }
  });
}

function toTools(body: ChatCompletionBody): ToolDefinition[] {
  if (body.tool_choice === "none") return [];
  return (body.tools ?? []).map(({ function: fn }) => ({
    name: fn.name,
    ...(fn.description ? { description: fn.description } : {}),
    ...(fn.parameters ? { parameters: fn.parameters } : {}),
  }));
}

function wireToolCall(call: ToolCall) {
  return {
    id: call.callId,
    type: "function" as const,
    function: { name: call.name, arguments: call.arguments },
  };
}

function finishReason(result: GenerateResult, calls: number): FinishReason {
  if (result.stopReason === "length") return "length";
  return calls > 0 ? "tool_calls" : "stop";
}

function usageOf(result: GenerateResult): ChatCompletionUsage {
  const { usage } = result;
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    total_tokens: usage.inputTokens + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedInputTokens },
    completion_tokens_details: {
      reasoning_tokens: 0,
      accepted_prediction_tokens: usage.acceptedPredictionTokens,
      rejected_prediction_tokens: usage.rejectedPredictionTokens,
    },
  };
}
