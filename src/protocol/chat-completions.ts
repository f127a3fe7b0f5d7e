import { z } from "zod";
import { responseFormatSchema } from "./output-format.js";
import { functionDefinitionFields } from "./responses-request.js";

/** Schema for `POST /v1/chat/completions`, the API many existing tools speak. */

const MAX_TEXT = 4 * 1024 * 1024;
const text = z.string().max(MAX_TEXT);

const textPart = z.object({ type: z.literal("text"), text });
const mediaPart = z.object({ type: z.enum(["image_url", "input_audio", "file"]) }).loose();
const content = z.union([text, z.array(z.discriminatedUnion("type", [textPart, mediaPart])).max(10_000)]);

const toolCall = z.object({
  id: z.string().min(1).max(256),
  type: z.literal("function"),
  function: z.object({ name: z.string().min(1).max(256), arguments: text }),
});

const message = z.discriminatedUnion("role", [
  z.object({ role: z.enum(["system", "developer"]), content, name: z.string().max(256).optional() }),
  z.object({ role: z.literal("user"), content, name: z.string().max(256).optional() }),
  z.object({
    role: z.literal("assistant"),
    content: content.nullish(),
    tool_calls: z.array(toolCall).max(1024).nullish(),
    name: z.string().max(256).optional(),
    refusal: z.string().max(MAX_TEXT).nullish(),
  }),
  z.object({ role: z.literal("tool"), content, tool_call_id: z.string().min(1).max(256) }),
]);
export type ChatCompletionMessage = z.infer<typeof message>;

const functionTool = z.object({
  type: z.literal("function"),
  function: z.object(functionDefinitionFields),
});

export const chatCompletionBodySchema = z
  .object({
    model: z.string().max(512).optional(),
    messages: z.array(message).min(1).max(10_000),
    tools: z.array(functionTool).max(512).nullish(),
    /** An option, a named function, or another tool type (which the server refuses). */
    tool_choice: z
      .union([
        z.enum(["auto", "none", "required"]),
        z
          .object({
            type: z.literal("function"),
            function: z.object({ name: functionDefinitionFields.name }).loose(),
          })
          .loose(),
        z
          .object({
            type: z
              .string()
              .max(64)
              .refine(
                (type) => type !== "function",
                "a function tool_choice is {type: 'function', function: {name}}",
              ),
          })
          .loose(),
      ])
      .nullish(),
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).loose().nullish(),
    max_tokens: z.number().int().min(1).max(1_000_000).nullish(),
    max_completion_tokens: z.number().int().min(1).max(1_000_000).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    seed: z.number().int().nullish(),
    n: z.number().int().min(1).max(1).nullish(),
    stop: z.union([z.string().min(1).max(256), z.array(z.string().min(1).max(256)).max(4)]).nullish(),
    /** Structured output (`json_schema`, `json_object`) or plain `text`. */
    response_format: responseFormatSchema.nullish(),
    prediction: z.object({ type: z.literal("content"), content }).nullish(),
    /** OpenAI's prompt-cache routing hint; Spark keeps the KV state of this conversation. */
    prompt_cache_key: z.string().max(256).nullish(),
  })
  .loose();
export type ChatCompletionBody = z.infer<typeof chatCompletionBodySchema>;

export type FinishReason = "stop" | "length" | "tool_calls";

export interface ChatCompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: {
    reasoning_tokens: number;
    accepted_prediction_tokens: number;
    rejected_prediction_tokens: number;
  };
}
