import { z } from "zod";
import { textFormatSchema } from "./output-format.js";

/**
 * Schemas for what clients send to `/v1/responses` (HTTP body and WebSocket events). Fields Spark
 * does not implement but that do not change the result are accepted and ignored; fields that would
 * silently change the result are rejected by the server with `unsupported_parameter`.
 */

const MAX_TEXT = 4 * 1024 * 1024;
const MAX_ITEMS = 10_000;
const MAX_TOOLS = 512;

const id = z.string().min(1).max(256);
const text = z.string().max(MAX_TEXT);

const inputTextPart = z.object({ type: z.literal("input_text"), text });
const outputTextPart = z.object({ type: z.literal("output_text"), text }).loose();
const refusalPart = z.object({ type: z.literal("refusal"), refusal: text });
/** Images, audio and files are valid Responses input, but a text model cannot see them. */
const mediaPart = z.object({ type: z.enum(["input_image", "input_file", "input_audio"]) }).loose();
const contentPart = z.discriminatedUnion("type", [inputTextPart, outputTextPart, refusalPart, mediaPart]);

export const messageItemSchema = z.object({
  type: z.literal("message").optional(),
  id: id.optional(),
  status: z.string().max(64).optional(),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([text, z.array(contentPart).max(MAX_ITEMS)]),
});

const functionCallItem = z.object({
  type: z.literal("function_call"),
  id: id.optional(),
  status: z.string().max(64).optional(),
  call_id: id,
  name: z.string().min(1).max(256),
  arguments: text,
});

const functionCallOutputItem = z.object({
  type: z.literal("function_call_output"),
  id: id.optional(),
  status: z.string().max(64).optional(),
  call_id: id,
  output: z.union([text, z.array(contentPart).max(MAX_ITEMS)]),
});

/** Reasoning items come back from clients that replay a whole transcript; a local model has none. */
const reasoningItem = z.object({ type: z.literal("reasoning") }).loose();

export const inputItemSchema = z.union([
  messageItemSchema,
  functionCallItem,
  functionCallOutputItem,
  reasoningItem,
]);
export type InputItem = z.infer<typeof inputItemSchema>;

/** A function tool's fields, shared by the Responses and Chat Completions shapes. */
export const functionDefinitionFields = {
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,128}$/, "a tool name is 1-128 letters, digits, _ . or -"),
  description: z
    .string()
    .max(64 * 1024)
    .nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
};

export const functionToolSchema = z.object({ type: z.literal("function"), ...functionDefinitionFields });
/** Tools of other types (web_search, namespace, ...) cannot run on a local model and are ignored. */
const otherToolSchema = z.object({ type: z.string().max(64) }).loose();
const toolSchema = z.union([functionToolSchema, otherToolSchema]);

/** `tool_choice`: an option, a named function, or another tool type (which the server refuses). */
const toolChoiceSchema = z.union([
  z.enum(["auto", "none", "required"]),
  z.object({ type: z.literal("function"), name: functionDefinitionFields.name }).loose(),
  z
    .object({
      type: z
        .string()
        .max(64)
        .refine((type) => type !== "function", "a function tool_choice is {type: 'function', name}"),
    })
    .loose(),
]);

const textConfigSchema = z
  .object({
    /** Structured output (`json_schema`, `json_object`) or plain `text`. */
    format: textFormatSchema.optional(),
    verbosity: z.string().max(32).nullish(),
  })
  .loose();

/** The body of `POST /v1/responses`, minus transport-only fields. */
export const responseCreateBodySchema = z
  .object({
    model: z.string().max(512).optional(),
    instructions: text.nullish(),
    input: z.union([text, z.array(inputItemSchema).max(MAX_ITEMS)]).optional(),
    tools: z.array(toolSchema).max(MAX_TOOLS).nullish(),
    tool_choice: toolChoiceSchema.nullish(),
    previous_response_id: id.nullish(),
    max_output_tokens: z.number().int().min(1).max(1_000_000).nullish(),
    temperature: z.number().min(0).max(2).nullish(),
    top_p: z.number().gt(0).max(1).nullish(),
    store: z.boolean().nullish(),
    stream: z.boolean().nullish(),
    background: z.boolean().nullish(),
    metadata: z.record(z.string().max(64), z.string().max(512)).nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    text: textConfigSchema.nullish(),
    seed: z.number().int().nullish(),
    /** Predicted Outputs, as in Chat Completions: text the output will mostly repeat. */
    prediction: z
      .object({ type: z.literal("content"), content: z.union([text, z.array(contentPart).max(MAX_ITEMS)]) })
      .nullish(),
    /** Spark accepts WebSocket mode's `generate: false` (pre-warm) over HTTP too. */
    generate: z.boolean().nullish(),
  })
  .loose();
export type ResponseCreateBody = z.infer<typeof responseCreateBodySchema>;

/**
 * A WebSocket lane (`stream_id`): 1-256 of `[A-Za-z0-9_.-]`, the bounds the SDK's lane helper
 * (`ResponsesWebSocketSession.lane`) enforces.
 */
export const streamIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_.-]{1,256}$/, "a stream_id is 1-256 letters, digits, _ . or -");

export const responseCreateEventSchema = responseCreateBodySchema.extend({
  type: z.literal("response.create"),
  /** The lane: creates of one lane run first-in-first-out, lanes side by side. Absent: the default lane. */
  stream_id: streamIdSchema.nullish(),
});
export type ResponseCreateEvent = z.infer<typeof responseCreateEventSchema>;

const steerMessage = z.object({
  type: z.literal("message").optional(),
  role: z.literal("user"),
  content: z.union([text, z.array(contentPart).max(MAX_ITEMS)]),
});

export const responseSteerEventSchema = z.object({
  type: z.literal("response.steer"),
  previous_response_id: id,
  input: z.union([text.min(1), z.array(steerMessage).min(1).max(MAX_ITEMS)]),
});
export type ResponseSteerEvent = z.infer<typeof responseSteerEventSchema>;

/** Cancellation is not typed by the SDK; both names are in use. */
export const responseCancelEventSchema = z.object({
  type: z.enum(["response.cancel", "response.interrupt"]),
  response_id: id.nullish(),
  /** Cancels the response running on this lane. Neither field: the default lane's. */
  stream_id: streamIdSchema.nullish(),
});
export type ResponseCancelEvent = z.infer<typeof responseCancelEventSchema>;

/** The longest draft (UTF-16 code units) a `spark.draft` may carry: a message being typed, pasted code included. */
export const MAX_DRAFT_TEXT = 256 * 1024;

/**
 * Spark's type-ahead (WebSocket mode): the user message being typed, with what the following
 * `response.create` would carry before it. The server evaluates the part that can no longer change
 * into the conversation's state; it never changes what a later response is given.
 */
export const sparkDraftEventSchema = z.object({
  type: z.literal("spark.draft"),
  model: z.string().max(512).nullish(),
  previous_response_id: id.nullish(),
  instructions: text.nullish(),
  /** Items the next request sends before the user's message (function call outputs). */
  input: z.array(inputItemSchema).max(MAX_ITEMS).nullish(),
  tools: z.array(toolSchema).max(MAX_TOOLS).nullish(),
  draft: z.string().max(MAX_DRAFT_TEXT),
});
export type SparkDraftEvent = z.infer<typeof sparkDraftEventSchema>;

export const CLIENT_EVENT_SCHEMAS = {
  "response.create": responseCreateEventSchema,
  "spark.draft": sparkDraftEventSchema,
  "response.steer": responseSteerEventSchema,
  "response.cancel": responseCancelEventSchema,
  "response.interrupt": responseCancelEventSchema,
} as const;
export type ClientEventType = keyof typeof CLIENT_EVENT_SCHEMAS;
